"""The suite's own rules: the comparison, the causes read from pactum's errors, valgrind's
verdicts, and the list files. Run by scripts/test.sh before the slice."""

import numpy as np
import pytest

import corpus


def test_outputs_match_is_onnx_rule():
    f = np.array([1.0, 2.0, np.nan], dtype=np.float32)
    assert corpus.outputs_match(f, f.copy(), 1e-3, 1e-7) is None
    assert corpus.outputs_match(f, f * (1 + 5e-4), 1e-3, 1e-7) is None
    assert "Mismatch" in corpus.outputs_match(f, f * 1.01, 1e-3, 1e-7)
    assert "dtype" in corpus.outputs_match(f, f.astype(np.float64), 1e-3, 1e-7)
    assert "shape" in corpus.outputs_match(f, f[:2], 1e-3, 1e-7)
    unsigned = np.array([65535, 1], dtype=np.uint16)
    assert corpus.outputs_match(unsigned, unsigned.view(np.int16), 1e-3, 1e-7) is None
    assert "dtype" in corpus.outputs_match(unsigned, unsigned.astype(np.int32), 1e-3, 1e-7)
    ints = np.array([1, 2], dtype=np.int64)
    assert corpus.outputs_match(ints, ints + np.array([0, 1]), 1e-3, 1e-7) is not None


def test_npy_form_takes_numpy_scalars_and_refuses_what_npy_cannot_hold():
    assert corpus.npy_form(np.float32(2)).shape == ()
    assert corpus.npy_form([np.zeros(2)]) is None
    assert corpus.npy_form(np.array(["a"], dtype=object)) is None
    import ml_dtypes

    assert corpus.npy_form(np.zeros(2, dtype=ml_dtypes.bfloat16)) is None


@pytest.mark.parametrize("text,cause", [
    ("RuntimeError: native hal.buffer_view.assert: INVALID_ARGUMENT: tensor element type "
     "mismatch; expected i16 (0x10000010) but have ui16 (0x12000010)", "unsigned-int-refused"),
    ("tensor element type mismatch; expected i1 (0x13000008) but have i1 (0x10000001)",
     "numpy-bool-as-i1"),
    ('required import "hal.device.queue.barrier" is not exported by any module registered '
     "before it", "hal-import-missing"),
    ('required import "vmvx.add.2d.f32" is not exported by any module', "vmvx-import-missing"),
    ("verifying function 3: unknown opcode 0x3e 0x3e", "vm-opcode-unknown"),
    ("something new", "other"),
])
def test_pactum_causes(text, cause):
    assert corpus.pactum_cause(text) == cause


COMPILED = """==1== Invalid read of size 4
==1==    at 0x4859516: ???
==1==    by 0x7836BC: pactum_iree::hal::executable::library::Call::run (library.rs:496)
==1==  Address 0x4c9249c is 28 bytes after a block of size 16 in arena "client"
==1== 
"""
# valgrind sometimes cannot unwind out of the compiled code (a frame of garbage after it).
COMPILED_UNWIND_LOST = """==1== Invalid read of size 4
==1==    at 0x5347516: ???
==1==    by 0x7FFFFFFFFFFFFFF: ???
==1==  Address 0x4ca815c is 28 bytes after a block of size 32 in arena "client"
==1== 
"""
VECTOR_LANES = """==1== Conditional jump or move depends on uninitialised value(s)
==1==    at 0x4859AF9: ???
==1==    by 0x7836BC: pactum_iree::hal::executable::library::Call::run (library.rs:496)
==1== 
"""
OWN = """==1== Conditional jump or move depends on uninitialised value(s)
==1==    at 0x7836BC: pactum_iree::vm::interp::Machine::execute (interp.rs:1)
==1== 
"""

RESULTS_WRITTEN = """==1== Syscall param write(buf) points to uninitialised byte(s)
==1==    at 0x4A53350: write (write.c:26)
==1==    by 0x478979: pactum_npy::write_file (lib.rs:193)
==1== 
"""


def test_memcheck_tells_compiled_code_from_pactum():
    assert corpus.memcheck_class(COMPILED) == ("iree-wrong",
                                               "compiled-code-reads-outside-bindings")
    assert corpus.memcheck_class(COMPILED + OWN) == ("pactum-wrong", "memcheck")
    assert corpus.memcheck_class(COMPILED_UNWIND_LOST + COMPILED) == (
        "iree-wrong", "compiled-code-reads-outside-bindings")
    # Unnamed code called by a named frame that is not the dispatch is not assumed compiled.
    assert corpus.memcheck_class(COMPILED_UNWIND_LOST.replace(
        "by 0x7FFFFFFFFFFFFFF: ???", "by 0x48: pactum_npy::write_file (lib.rs:1)")) == (
        "pactum-wrong", "memcheck")
    # Results computed from what the compiled code read outside its bindings are written out
    # with those bytes: the compiled code's doing, unless it read nothing it should not.
    assert corpus.memcheck_class(COMPILED + RESULTS_WRITTEN) == (
        "iree-wrong", "compiled-code-reads-outside-bindings")
    assert corpus.memcheck_class(RESULTS_WRITTEN) == ("pactum-wrong", "memcheck")
    assert corpus.memcheck_class(VECTOR_LANES) == ("memcheck-clean",
                                                   "compiled-code-uses-uninitialised-values")


def test_list_files_parse():
    listed = corpus.read_slice()
    assert listed and len(set(listed)) == len(listed)
    known = corpus.read_known()
    causes = {c for c, _ in corpus.PACTUM_CAUSES} | {"other", "wrong-values", "crash", "timeout"}
    assert set(known.values()) <= causes


def outcome(case, outcome_, cls, memcheck=False):
    return {"case": case, "backend": "llvm-cpu", "outcome": outcome_, "class": cls,
            "detail": "", "memcheck": memcheck}


def test_slice_check_fails_on_new_differences_and_on_fixed_listed_ones():
    known = {("a", "llvm-cpu"): "unsigned-int-refused"}
    listed_fails = outcome("a", "pactum-wrong", "unsigned-int-refused")
    assert corpus.check_slice([listed_fails, outcome("b", "both-right", "both-right")],
                              known) == 0
    # a new difference
    assert corpus.check_slice([listed_fails, outcome("b", "pactum-wrong", "other")], known) == 1
    # the listed case now passes, or fails for another cause
    assert corpus.check_slice([outcome("a", "both-right", "both-right")], known) == 1
    assert corpus.check_slice([outcome("a", "pactum-wrong", "wrong-values")], known) == 1
    # an error valgrind finds in pactum's own code
    assert corpus.check_slice([listed_fails, outcome("a", "pactum-wrong", "memcheck", True)],
                              known) == 1
