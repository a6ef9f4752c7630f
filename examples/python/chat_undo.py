"""A conversation with undo: a reply is taken back and asked for again.
python3 chat_undo.py MODEL"""
import sys

import offgraph

model = offgraph.Model(sys.argv[1])
session = model.session()
print("template:", model.chat_template.name)
messages = [{"role": "user", "content": "Once upon a time"}]
session.prefill(model.chat_template.encode(messages))
first = session.generate(max_new_tokens=20)
print("reply:", first.text)
session.undo()  # takes the reply back (the prompt stays)
again = session.generate(max_new_tokens=20)
print("again:", again.text)
print("same:", first.text == again.text)
branch = session.fork()  # a second conversation from here
print("branch:", branch.generate(" The end.", max_new_tokens=10).text)
