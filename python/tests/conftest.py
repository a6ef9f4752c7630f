"""Fixtures of the Python tests: the real model (a missing file fails loudly) and its greedy reference."""
import os

import pytest

MODEL = os.environ.get("OG_TEST_MODEL", os.path.join(os.path.dirname(__file__), "../../../shared/testdata/models/stories260K/stories260K.gguf"))
PROMPT = "Once upon a time"
PROMPT_IDS = [1, 403, 407, 261, 378]
# Greedy, 60 new tokens (shared/testdata/models/stories260K/REFERENCE_OUTPUTS.md, case A).
CONTINUATION = (", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, "
                "red ball. She wanted to play with it, but it was too high.\nLily")


@pytest.fixture(scope="session")
def model_path():
    assert os.path.exists(MODEL), f"the test model is missing: {MODEL}"
    return MODEL


@pytest.fixture(scope="session")
def model(model_path):
    import offgraph
    return offgraph.Model(model_path)
