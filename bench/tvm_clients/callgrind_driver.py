"""One case of bench/tvm_clients/cases.py under callgrind (bench/count_tvm_clients_instructions.sh):
the case is built and warmed with instrumentation off, then N calls are counted (dump 1) and
2N more (dump 2); (dump 2 - dump 1) / N is the cost of one call, with whatever the loop does
once (the dumps' own calls) cancelled out.

usage: callgrind_driver.py CASE N CONTROL_LIB   (valgrind --tool=callgrind --instr-atstart=no)
"""
import ctypes
import sys

from cases import CASES

cg = ctypes.CDLL(sys.argv[3])

maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if l.rstrip().endswith("libtvm_ffi.so")})
print("mapped", maps, file=sys.stderr)
case, n = sys.argv[1], int(sys.argv[2])
call = CASES[case][0]()
for _ in range(50): call()
cg.cg_start()
for _ in range(50): call()
cg.cg_zero()
for _ in range(n): call()
cg.cg_dump(b"N")
for _ in range(2 * n): call()
cg.cg_dump(b"2N")
cg.cg_stop()
