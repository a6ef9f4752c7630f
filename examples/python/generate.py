"""Greedy generation: python3 generate.py MODEL [PROMPT]"""
import sys

import offgraph

model = offgraph.Model(sys.argv[1])
session = model.session()
prompt = sys.argv[2] if len(sys.argv) > 2 else "Once upon a time"
result = session.generate(prompt, max_new_tokens=60)
print(prompt + result.text)
print(f"[{len(result.tokens)} tokens, stopped by {result.stop_reason}]", file=sys.stderr)
