"""Many prompts through the engine (continuous batching), each read as it streams.
python3 batch.py MODEL"""
import sys

import offgraph

model = offgraph.Model(sys.argv[1])
prompts = ["Once upon a time", "Lily", "The dog"]
with model.engine(max_sequences=2, max_session_tokens=256) as engine:
    requests = [engine.submit(p, max_new_tokens=30) for p in prompts]
    for prompt, request in zip(prompts, requests):
        result = request.result()
        print(f"{prompt!r} -> {result.text!r} [{result.stop_reason}]")
    stats = engine.stats()
    print(f"steps: {stats['steps']}, generated: {stats['generated_tokens']}, finished: {stats['finished']}")
