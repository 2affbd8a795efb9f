import os
import random

import numpy as np
import pytest

import parasurf

SEED = int(os.environ.get("PARASURF_TEST_SEED", random.SystemRandom().randrange(2**32)))


def pytest_report_header(config):
    return f"parasurf python tests: seed {SEED} (set PARASURF_TEST_SEED to reproduce); " + \
        ("CUDA present" if parasurf.cuda_available() else "no CUDA device: the cuda cases skip")


@pytest.fixture
def rng():
    return np.random.default_rng(SEED)


def devices():
    return ["cpu", "cuda"] if parasurf.cuda_available() else ["cpu", pytest.param("cuda", marks=pytest.mark.skip(
        reason="no CUDA device (or a build without CUDA)"))]


def pytest_terminal_summary(terminalreporter):
    # Also under -q (which hides the header), so that a failure in CI can be reproduced.
    terminalreporter.write_line(f"parasurf python tests: seed {SEED} (set PARASURF_TEST_SEED to reproduce)")
