"""factorization="qr" in the CUDA binding, without a GPU: the config's factorization code, the
square-root state (R̃, z̃) through rh_cuda_state_load_factor / rh_cuda_state_read_factor and
CudaEngine's marshalling of it, and the refusals the library makes before it needs a device.
tests/gpu/test_cuda_qr.py runs the mode itself on a device."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from rhuber.core import Config, State
from rhuber.core.types import CONTRACT_FEATURES, FACTORIZATIONS


def binding():
    from rhuber._native import cuda

    return cuda


def loaded_library():
    """The CUDA binding with librh_cuda loaded, or a skip saying why it cannot be."""
    from rhuber import _native
    from rhuber.errors import EngineNotAvailableError

    try:
        return _native.load("cuda")
    except EngineNotAvailableError as exc:
        pytest.skip(f"rhuber-native-cuda is not installed: {exc}")


def test_the_binding_declares_the_mode_and_its_codes():
    cuda = binding()
    assert "qr" in cuda.CONTRACT_FEATURES
    assert set(cuda.CONTRACT_FEATURES) == set(CONTRACT_FEATURES)
    assert cuda.FACTORIZATIONS == FACTORIZATIONS
    assert cuda.SOLVERS[cuda.CONSTANTS["RH_CUDA_SOLVER_QR"]] == "qr"
    for name in FACTORIZATIONS:
        assert cuda.FACTORIZATIONS.index(name) == cuda.CONSTANTS[
            f"RH_CUDA_FACTORIZATION_{name.upper()}"]


@pytest.mark.parametrize("factorization", FACTORIZATIONS)
def test_the_config_carries_the_factorization(factorization):
    cuda = binding()
    struct = cuda.config_struct(Config(factorization=factorization).native_dict(np.float64))
    assert struct.factorization == cuda.CONSTANTS[f"RH_CUDA_FACTORIZATION_{factorization.upper()}"]


def test_an_unknown_factorization_is_refused_by_name():
    cuda = binding()
    config = Config().native_dict(np.float64)
    config["factorization"] = "householder"
    with pytest.raises(ValueError, match=r"factorization.*householder"):
        cuda.config_struct(config)


def test_load_without_the_factor_call_refuses_a_square_root_state():
    """rh_cuda_state_load cannot carry R̃ and z̃: a state info that says the state has them is
    refused, naming the call that can, before the state handle is looked at."""
    cuda = loaded_library()
    info = cuda.StateInfo(dtype=cuda.CONSTANTS["RH_CUDA_FLOAT64"], dim=2, has_factor=1)
    status = cuda.LIB.rh_cuda_state_load(None, ctypes.byref(info), None, None, None, None)
    assert status == cuda.CONSTANTS["RH_CUDA_ERROR_INVALID_ARGUMENT"]
    assert "rh_cuda_state_load_factor" in cuda.LIB.rh_cuda_last_error().decode()


@pytest.mark.parametrize("call", ["rh_cuda_state_load_factor", "rh_cuda_state_read_factor"])
def test_the_factor_calls_refuse_a_null_state(call):
    cuda = loaded_library()
    info = cuda.StateInfo(dtype=cuda.CONSTANTS["RH_CUDA_FLOAT64"], dim=2, has_factor=1)
    status = getattr(cuda.LIB, call)(None, ctypes.byref(info), None, None, None, None, None, None)
    assert status == cuda.CONSTANTS["RH_CUDA_ERROR_INVALID_ARGUMENT"]
    assert cuda.LIB.rh_cuda_last_error().decode() == "state must not be NULL"


def test_the_binding_refuses_half_a_square_root_before_the_library():
    cuda = binding()
    state = cuda.State.__new__(cuda.State)  # no handle: the check comes first
    with pytest.raises(ValueError, match="factor and vector"):
        state.load({"dtype": "float64"}, np.zeros(2), np.eye(2), None, None,
                   factor=np.eye(2), vector=None)


class FakeDeviceState:
    """Stands in for rhuber._native.cuda.State: records what the wrapper loads, and reads back
    the square-root state a qr update would leave."""

    def __init__(self, d):
        self.d = d
        self.loaded = None

    def load(self, scalars, coef, information, gram, score_gram, factor=None, vector=None):
        self.loaded = {"scalars": scalars, "coef": coef, "information": information,
                       "gram": gram, "factor": factor, "vector": vector}

    def read(self, coef, information, gram, score_gram, factor, vector):
        R = np.triu(np.arange(1.0, self.d * self.d + 1).reshape(self.d, self.d))
        coef[:] = 0.5
        factor[:] = R
        vector[:] = 2.0
        information[:] = R.T @ R
        return {"n_samples_seen": 10, "effective_weight": 10.0, "batch_count": 1,
                "previous_lambda": 0.0, "scale": 1.0, "score_sq_sum": 0.0, "curvature_sum": 0.0,
                "curvature_sq_sum": 0.0, "inference_weight": 10.0, "inference_batches": 1,
                "has_matrices": False, "has_factor": True}


def fake_engine():
    from rhuber.engines.cuda import AbiCodes, CudaEngine

    class FakeEngine:
        def __init__(self):
            self.states = []

        def new_state(self, dtype, d):
            self.states.append(FakeDeviceState(d))
            return self.states[-1]

    engine = CudaEngine.__new__(CudaEngine)
    engine._engine = FakeEngine()
    engine._abi = AbiCodes.from_constants(binding().CONSTANTS)
    engine._states = {}
    engine._resident = {}
    return engine


def test_the_wrapper_loads_the_factor_of_a_qr_state():
    engine = fake_engine()
    R = np.triu(np.ones((3, 3)))
    state = State(coef=np.zeros(3), information=R.T @ R, batch_count=1, n_samples_seen=5,
                  effective_weight=5.0, information_factor=R, information_vector=np.ones(3))
    handle, following = engine._states_for(state, "float64", 2, Config(factorization="qr"))
    assert handle is following
    assert np.array_equal(handle.loaded["factor"], R)
    assert np.array_equal(handle.loaded["vector"], np.ones(3))
    cholesky = state.replace(information_factor=None, information_vector=None)
    handle, _ = engine._states_for(cholesky, "float64", 2, Config())
    assert handle.loaded["factor"] is None and handle.loaded["vector"] is None


def test_the_wrapper_reads_a_qr_state_back_with_its_factor():
    engine = fake_engine()
    handle = engine._engine.new_state("float64", 3)
    state = engine._adopt(handle, "float64", 3)
    assert state.factorization == "qr"
    assert np.array_equal(state.information_factor, np.triu(state.information_factor))
    assert np.array_equal(state.information_vector, np.full(3, 2.0))
    assert not state.information_factor.flags.writeable  # what the device holds, unchanged
    assert engine._resident[("float64", 3)] is state
