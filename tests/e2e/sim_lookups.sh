# sim_lookups.sh - the software device's cuGetProcAddress returns the exact variant the real
# driver returns for every lookup the CUDA runtime makes. tests layer.
source "$(dirname "$0")/lib.sh"
out=$($B/progs/sim_lookups tests/data/cudart-lookups.txt) || fail "lookup mismatch"
note "$out"
