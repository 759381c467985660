"""One torch thread for the ablation tests: the models are tiny, and two OpenMP threads on a
busy 2-core machine run some forwards ~100x slower (spin-waiting). Restored afterwards."""

import pytest


@pytest.fixture(scope="package", autouse=True)
def _one_torch_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
