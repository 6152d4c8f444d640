# cufold - one build for the preload library, the software CUDA device, the test kernels,
# the test programs and the tests.
#
#   make                 build everything into build/
#   make test            install missing packages (make deps), build, run every test
#   make demo            build and run a sample program on the software device
#   make SAN=address     (or undefined, thread) a sanitizer build in build/address/ ...
#   make MODE=debug      a debug build (-O0, cf_assert on) in build/debug/
#   make api             regenerate shim/cuda_api.def from the toolkit
#
# Nothing here links against NVIDIA's libcuda: libcufold.so dlopens the driver at run time and
# the test programs link against the software device, build/simcuda/libcuda.so.1.

CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
CC        ?= gcc
PYTHON    ?= python3
SAN       ?=
MODE      ?= release

ifneq ($(BUILD),)
B := $(BUILD)
else ifneq ($(SAN),)
B := build/$(SAN)
else ifeq ($(MODE),debug)
B := build/debug
else
B := build
endif

WARN := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wformat=2 -Wvla -Wno-format-nonliteral
ifneq ($(filter 1 true,$(WERROR) $(CI)),)
WARN += -Werror
endif

OPT := -O2
ifeq ($(MODE),debug)
OPT := -O0 -DCF_DEBUG=1
endif
SANFLAGS :=
ifneq ($(SAN),)
SANFLAGS := -fsanitize=$(SAN) -fno-omit-frame-pointer
endif

CPPFLAGS := -I. -I$(CUDA_HOME)/include -Itests/simcuda -Itests/lib -I$(B)/gen
CFLAGS   := -std=c11 -D_GNU_SOURCE -fPIC -g $(OPT) $(WARN) $(SANFLAGS)
LDSAN    := $(SANFLAGS)

# ---------------------------------------------------------------- cufold
CF_SRC  := $(sort $(wildcard common/*.c shim/*.c capture/*.c rewrite/*.c rewrite/rules/*.c replay/*.c))
CF_OBJ  := $(patsubst %.c,$(B)/obj/%.o,$(CF_SRC))
# Only libc's: libunwind is dlopen'ed privately by capture/callsite.c when call sites are on.
CF_LIBS := -ldl -lpthread

# ---------------------------------------------------------------- software device
SIM_SRC := $(sort $(wildcard tests/simcuda/*.c))
SIM_OBJ := $(patsubst %.c,$(B)/obj/%.o,$(SIM_SRC))

# ---------------------------------------------------------------- kernels, programs, tests
KERNELS   := $(patsubst tests/kernels/%.cu,$(B)/kernels/%.ptx,$(wildcard tests/kernels/*.cu))
TLIB_SRC  := $(sort $(wildcard tests/lib/*.c))
TLIB_OBJ  := $(patsubst %.c,$(B)/obj/%.o,$(TLIB_SRC))
PROGS     := $(patsubst tests/progs/%.c,$(B)/progs/%,$(wildcard tests/progs/*.c))
WORKLOADS := $(patsubst tests/workloads/%.c,$(B)/workloads/%,$(wildcard tests/workloads/*.c))
PLUGINS   := $(patsubst tests/plugins/%.c,$(B)/plugins/%.so,$(wildcard tests/plugins/*.c)) \
             $(patsubst tests/plugins/%.cpp,$(B)/plugins/%.so,$(wildcard tests/plugins/*.cpp))
# tests/unit/sim_*.c drive the software device through its public API (linked against it);
# tests/unit/test_*.c test cufold's own modules in-process (linked with libcufold.a).
SIM_UNIT  := $(patsubst tests/unit/%.c,$(B)/unit/%,$(wildcard tests/unit/sim_*.c))
CF_UNIT   := $(patsubst tests/unit/%.c,$(B)/unit/%,$(wildcard tests/unit/test_*.c))

SIMLIB    := $(B)/simcuda/libcuda.so.1
CFLIB     := $(B)/libcufold.so
CFARCH    := $(B)/libcufold.a

.PHONY: all deps test demo api clean check-api bench bench-overhead fault-sweep
all: $(CFLIB) $(SIMLIB) $(KERNELS) $(PROGS) $(WORKLOADS) $(PLUGINS) $(SIM_UNIT) $(CF_UNIT)

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(B)/gen/cuda_errors.h: scripts/gen-cuda-errors
	@mkdir -p $(dir $@)
	$(PYTHON) scripts/gen-cuda-errors $(CUDA_HOME) $@

$(SIM_OBJ) $(CF_OBJ) $(TLIB_OBJ): | $(B)/gen/cuda_errors.h

# cufold's objects are compiled with hidden visibility: only the version script's names leave.
$(CF_OBJ): CFLAGS += -fvisibility=hidden

$(B)/gen/libcufold.map: shim/cuda_api.def
	@mkdir -p $(dir $@)
	{ echo '{ global:'; sed -n 's/^CF_API(\([A-Za-z0-9_]*\),.*/  \1;/p; s/^CF_API_UNTYPED(\([A-Za-z0-9_]*\)).*/  \1;/p' $<; \
	  echo '  dlsym;'; echo 'local: *; };'; } > $@

$(CFLIB): $(CF_OBJ) $(B)/gen/libcufold.map
	$(CC) -shared -o $@ $(CF_OBJ) $(LDSAN) -Wl,-z,defs -Wl,--version-script=$(B)/gen/libcufold.map $(CF_LIBS)

$(CFARCH): $(CF_OBJ)
	rm -f $@ && ar rcs $@ $^

# ---------------------------------------------------------------- cufold: embedded kernels and cards
# cufold's own kernels (rewrite/kernels/*.cu) are compiled to PTX here and embedded in
# libcufold.so as bytes, together with the built-in kernel cards (rewrite/builtin_cards.txt):
# each becomes a generated header of `static const unsigned char` arrays (od, so no ISO
# string-length limit), included by rewrite/kernels.c and rewrite/cards.c. The device tests
# tests/unit/sim_cufold_*.c include the same PTX header, so they run the very bytes the
# library embeds.
RW_CU  := $(sort $(wildcard rewrite/kernels/*.cu))
RW_PTX := $(patsubst rewrite/kernels/%.cu,$(B)/rwkernels/%.ptx,$(RW_CU))

# $(call rw_embed,array name,file): a C array of the file's bytes plus a NUL, on stdout.
rw_embed = echo 'static const unsigned char $(1)[] = {'; od -An -v -tx1 $(2) | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0x00 };'

$(B)/rwkernels/%.ptx: rewrite/kernels/%.cu $(wildcard rewrite/kernels/*.h)
	@mkdir -p $(dir $@)
	$(NVCC) -ptx -arch=compute_90 -o $@ $<

$(B)/gen/rw_kernels_ptx.h: $(RW_PTX)
	@mkdir -p $(dir $@)
	{ echo '/* generated by the Makefile from the .cu files of rewrite/kernels: do not edit */'; \
	  $(foreach f,$(RW_PTX),$(call rw_embed,rw_ptx_$(basename $(notdir $(f))),$(f));) \
	  echo 'static const struct { const char *name; const unsigned char *text; } rw_ptx_files[] = {'; \
	  $(foreach f,$(RW_PTX),echo '	{ "$(basename $(notdir $(f)))", rw_ptx_$(basename $(notdir $(f))) },';) \
	  echo '};'; } > $@.tmp && mv $@.tmp $@

$(B)/gen/rw_builtin_cards.h: rewrite/builtin_cards.txt
	@mkdir -p $(dir $@)
	{ echo '/* generated by the Makefile from rewrite/builtin_cards.txt: do not edit */'; \
	  $(call rw_embed,rw_builtin_cards_txt,$<); } > $@.tmp && mv $@.tmp $@

$(B)/obj/rewrite/kernels.o: $(B)/gen/rw_kernels_ptx.h
$(B)/obj/rewrite/cards.o: $(B)/gen/rw_builtin_cards.h
$(filter $(B)/unit/sim_cufold_%,$(SIM_UNIT)): $(B)/gen/rw_kernels_ptx.h

# The software device exports every name the toolkit's stub exports: the ones implemented in
# tests/simcuda/*.c, and for the rest a generated stub answering CUDA_ERROR_NOT_SUPPORTED.
$(B)/gen/sim_unsupported.c: shim/cuda_api.def $(SIM_OBJ) scripts/gen-sim-unsupported
	@mkdir -p $(dir $@)
	$(PYTHON) scripts/gen-sim-unsupported shim/cuda_api.def $@ $(SIM_OBJ)

$(B)/obj/gen/sim_unsupported.o: $(B)/gen/sim_unsupported.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-missing-prototypes -c $< -o $@

$(B)/gen/simcuda.map: shim/cuda_api.def
	@mkdir -p $(dir $@)
	{ echo '{ global:'; echo '  cu*;'; echo '  sim_twin_*;'; echo '  simcuda_*;'; echo 'local: *; };'; } > $@

$(SIMLIB): $(SIM_OBJ) $(B)/obj/gen/sim_unsupported.o $(B)/gen/simcuda.map
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(SIM_OBJ) $(B)/obj/gen/sim_unsupported.o $(LDSAN) \
	  -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -Wl,-z,defs \
	  -Wl,--version-script=$(B)/gen/simcuda.map -ldl -lpthread -lm

$(B)/kernels/%.ptx: tests/kernels/%.cu
	@mkdir -p $(dir $@)
	$(NVCC) -ptx -arch=compute_90 -o $@ $<

# Test programs and workloads are plain driver-API programs linked against the software device.
PROG_LINK = $(LDSAN) -L$(B)/simcuda -l:libcuda.so.1 -ldl -lpthread -lm
$(B)/progs/%: tests/progs/%.c $(TLIB_OBJ) $(SIMLIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -DTEST_PTX_DIR='"$(abspath $(B)/kernels)"' $< $(TLIB_OBJ) -o $@ $(PROG_LINK)

$(B)/workloads/%: tests/workloads/%.c $(wildcard tests/workloads/*.h) $(TLIB_OBJ) $(SIMLIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(TLIB_OBJ) -o $@ $(PROG_LINK)

$(TLIB_OBJ): CPPFLAGS += -DTEST_PTX_DIR='"$(abspath $(B)/kernels)"'

$(B)/plugins/%.so: tests/plugins/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -shared $< -o $@ $(LDSAN)

$(B)/plugins/%.so: tests/plugins/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) -shared -fPIC -g $(OPT) -Wall -Wextra $(SANFLAGS) $< -o $@

$(B)/unit/sim_%: tests/unit/sim_%.c $(TLIB_OBJ) $(SIMLIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP $< $(TLIB_OBJ) -o $@ $(PROG_LINK) -lcmocka

# -MMD: a test binary is rebuilt when a header it includes changes (build/unit/*.d)
$(B)/unit/test_%: tests/unit/test_%.c $(CFARCH)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -DTEST_CARDS_FILE='"$(abspath tests/kernels/test-kernels.cards)"' $< -o $@ \
		$(CFARCH) $(LDSAN) $(CF_LIBS) -lcmocka

# Programs and device tests load the PTX and plugins at run time.
$(SIM_UNIT) $(PROGS) $(WORKLOADS): | $(KERNELS) $(PLUGINS)

# ---------------------------------------------------------------- commands
deps:
	@scripts/deps

test: deps
	@$(MAKE) --no-print-directory all
	@B=$(B) SAN=$(SAN) tests/run

demo: deps
	@$(MAKE) --no-print-directory all
	@B=$(B) scripts/demo

api:
	$(PYTHON) scripts/gen-cuda-api shim/cuda_api.def

# The committed list must be what the generator makes from this toolkit.
check-api:
	@mkdir -p $(B)/gen && $(PYTHON) scripts/gen-cuda-api $(B)/gen/cuda_api.def.check >/dev/null && \
	  cmp -s $(B)/gen/cuda_api.def.check shim/cuda_api.def && echo "cuda_api.def is current" || \
	  { echo "shim/cuda_api.def differs from the toolkit: run make api"; exit 1; }

bench: all
	@B=$(B) scripts/bench

bench-overhead: all
	@B=$(B) scripts/bench-overhead

fault-sweep: all
	@B=$(B) scripts/fault-sweep --full

clean:
	rm -rf build

-include $(shell find $(B)/obj $(B)/unit -name '*.d' 2>/dev/null)
