"""Streaming: the text appears as it is generated; Ctrl-C stops it cleanly.
python3 stream.py MODEL [PROMPT]"""
import sys

import offgraph

model = offgraph.Model(sys.argv[1])
session = model.session()
prompt = sys.argv[2] if len(sys.argv) > 2 else "Once upon a time"
print(prompt, end="", flush=True)
stream = session.stream(prompt, max_new_tokens=60)
try:
    for piece in stream:
        print(piece, end="", flush=True)
except KeyboardInterrupt:
    print("\n[interrupted]", file=sys.stderr)
print()
print(f"[stopped by {stream.result.stop_reason}]", file=sys.stderr)
