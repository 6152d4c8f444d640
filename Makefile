# cufold - one build for the preload library, the software CUDA device, the test kernels,
# the test programs and the tests.
#
#   make                 build everything into build/
#   make test            install missing packages (make deps), build, run every test
#   make demo            build and run a sample program on the software device
#   make SAN=address     (or undefined, thread) a sanitizer build in build/address/ ...
#   make MODE=debug      a debug build (-O0, cf_assert on) in build/debug/
#   make api             regenerate driver/cuda_api.def and cuda_api_flags.def from the toolkit
#   make check-layers    check that no product file includes a header of a layer above its own
#   make V=1             print the full commands (the default is one short line per file)
#   make install         libcufold.so, bin/cufold, its man page and example cards under PREFIX (DESTDIR)
#
# The build runs one job per CPU unless -j is given (make -j1 for a serial build).
#
# Nothing here links against NVIDIA's libcuda: libcufold.so dlopens the driver at run time and
# the test programs link against the software device, build/simcuda/libcuda.so.1.

# Parallel by default: one job per CPU, at the top level only (a sub-make shares its parent's
# jobs), and not when -j is given on the command line (which wins anyway) or in MAKEFLAGS.
ifeq ($(MAKELEVEL),0)
ifeq ($(filter -j% j%,$(MAKEFLAGS) $(shell printf '%s' "$$MAKEFLAGS")),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif
endif

# Quiet by default: $(call msg,TAG,what) prints "  TAG     what"; V=1 prints the commands.
V ?= 0
ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-7s %s\n' '$(1)' '$(2)'
endif

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
CFLAGS   := -std=c11 -D_GNU_SOURCE -fPIC -g $(OPT) $(WARN) $(SANFLAGS) -fno-lto
LDSAN    := $(SANFLAGS)

# ---------------------------------------------------------------- cufold
# The layers, bottom to top, are listed once: the LAYERS line of scripts/check-layers, which
# `make check-layers` runs. Their sources are the .c files of each layer's folder and its subfolders.
CF_LAYERS := $(shell sed -n 's/^LAYERS = "\(.*\)"\.split()$$/\1/p' scripts/check-layers)
ifeq ($(CF_LAYERS),)
$(error cannot read the LAYERS line of scripts/check-layers)
endif
CF_SRC  := $(sort $(foreach l,$(CF_LAYERS),$(wildcard $(l)/*.c $(l)/*/*.c)))
CF_OBJ  := $(patsubst %.c,$(B)/obj/%.o,$(CF_SRC))
# Only libc's: libunwind is dlopen'ed privately by capture/callsite.c when call sites are on.
CF_LIBS := -ldl -lpthread

# ---------------------------------------------------------------- software device
SIM_SRC := $(sort $(wildcard tests/simcuda/*.c))
SIM_OBJ := $(patsubst %.c,$(B)/obj/%.o,$(SIM_SRC))
# Product objects the software device is built on (tests may use the product, never the reverse):
# the PTX front end, so the device reads PTX exactly as cufold does, and the one decoder of images.
# libc (and dlopen) only; linked in, not scanned for sim_api_ entry points.
SIM_PRODUCT_OBJ := $(patsubst %.c,$(B)/obj/%.o,driver/ptx_lex.c driver/ptx_parse.c driver/ptx_names.c driver/image.c)

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

# runtime-API programs (tests/cudart/*.cu), each built three ways (see their rules below)
CUDART_CU    := $(sort $(wildcard tests/cudart/*.cu))
CUDART_NAMES := $(patsubst tests/cudart/%.cu,%,$(CUDART_CU))
CUDART_PROGS := $(foreach n,$(CUDART_NAMES),$(addprefix $(B)/cudart/$(n)-,shared static ptds))

SIMLIB    := $(B)/simcuda/libcuda.so.1
SIMNVML   := $(B)/simcuda/libnvidia-ml.so.1
CFLIB     := $(B)/libcufold.so
CFARCH    := $(B)/libcufold.a

.PHONY: all deps test demo api clean check-api check-layers bench bench-grid bench-overhead bench-interp fault-sweep corpus-effects \
        install uninstall man deps-clients test-clients deps-torch test-torch
all: $(CFLIB) $(SIMLIB) $(SIMNVML) $(KERNELS) $(PROGS) $(WORKLOADS) $(PLUGINS) $(SIM_UNIT) $(CF_UNIT) $(CUDART_PROGS)

# Every compile writes a .d file (-MMD -MP) next to its output, so touching any header rebuilds
# exactly what includes it; they are all included at the end.
DEPFLAGS := -MMD -MP

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(call msg,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(B)/gen/cuda_errors.h: scripts/gen-cuda-errors
	@mkdir -p $(dir $@)
	$(call msg,GEN,$@)
	$(Q)$(PYTHON) scripts/gen-cuda-errors $(CUDA_HOME) $@

$(SIM_OBJ) $(CF_OBJ) $(TLIB_OBJ): | $(B)/gen/cuda_errors.h

# cufold's objects are compiled with hidden visibility: only the version script's names leave.
$(CF_OBJ): CFLAGS += -fvisibility=hidden
# Release builds link libcufold.so with link-time optimization (issue 22): every replayed op
# crosses from the engine's entry (shim/engine.c) into replay's armed lane (replay/lane.c), and
# only the linker can inline across files (27 of the copy loop's 363 instructions an op,
# scripts/bench-overhead). The hooks, dlsym and the generated tables define symbols in top-level
# asm that LTO does not see used: they are compiled without it. Objects keep ordinary code too
# (-ffat-lto-objects), so programs linked with libcufold.a link without LTO.
LTO :=
ifeq ($(MODE)$(SAN),release)
LTO := -flto -ffat-lto-objects
endif
$(CF_OBJ): CFLAGS += $(LTO)
# (no SLP vectorizing there: a launch's hook packed four of its arguments into one vector store
# through seven shuffles, 3 instructions an op of recsys more than four stores; issue 22)
$(filter $(B)/obj/shim/hooks% $(B)/obj/shim/dlsym.o $(B)/obj/gen/%,$(CF_OBJ)): CFLAGS += -fno-lto -fno-tree-slp-vectorize
# the version (one line in VERSION): in the library's first log line and in the report
CUFOLD_VERSION := $(shell cat VERSION)
$(CF_OBJ): CPPFLAGS += -DCUFOLD_VERSION='"$(CUFOLD_VERSION)"'
$(CF_OBJ): VERSION

$(B)/gen/libcufold.map: driver/cuda_api.def
	@mkdir -p $(dir $@)
	$(call msg,GEN,$@)
	$(Q){ echo '{ global:'; sed -n 's/^CF_API(\([A-Za-z0-9_]*\),.*/  \1;/p; s/^CF_API_UNTYPED(\([A-Za-z0-9_]*\)).*/  \1;/p' $<; \
	  echo '  dlsym;'; echo 'local: *; };'; } > $@

$(CFLIB): $(CF_OBJ) $(B)/gen/libcufold.map
	$(call msg,LD,$@)
	$(Q)$(CC) -shared $(if $(LTO),$(OPT) $(WARN) -flto=auto) -o $@ $(CF_OBJ) $(LDSAN) -Wl,-z,defs -Wl,--version-script=$(B)/gen/libcufold.map $(CF_LIBS)

$(CFARCH): $(CF_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

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
	$(call msg,NVCC,$<)
	$(Q)$(NVCC) -ptx -arch=compute_90 -o $@ $<

$(B)/gen/rw_kernels_ptx.h: $(RW_PTX)
	@mkdir -p $(dir $@)
	$(call msg,GEN,$@)
	$(Q){ echo '/* generated by the Makefile from the .cu files of rewrite/kernels: do not edit */'; \
	  $(foreach f,$(RW_PTX),$(call rw_embed,rw_ptx_$(basename $(notdir $(f))),$(f));) \
	  echo 'static const struct { const char *name; const unsigned char *text; } rw_ptx_files[] = {'; \
	  $(foreach f,$(RW_PTX),echo '	{ "$(basename $(notdir $(f)))", rw_ptx_$(basename $(notdir $(f))) },';) \
	  echo '};'; } > $@.tmp && mv $@.tmp $@

$(B)/gen/rw_builtin_cards.h: rewrite/builtin_cards.txt
	@mkdir -p $(dir $@)
	$(call msg,GEN,$@)
	$(Q){ echo '/* generated by the Makefile from rewrite/builtin_cards.txt: do not edit */'; \
	  $(call rw_embed,rw_builtin_cards_txt,$<); } > $@.tmp && mv $@.tmp $@

$(B)/obj/rewrite/kernels.o: $(B)/gen/rw_kernels_ptx.h
$(B)/obj/rewrite/cards.o: $(B)/gen/rw_builtin_cards.h
$(filter $(B)/unit/sim_cufold_%,$(SIM_UNIT)): $(B)/gen/rw_kernels_ptx.h

# The software device exports every name the toolkit's stub exports, all defined in one generated
# file: an enter/call/leave wrapper for each sim_api_<symbol> that tests/simcuda/*.c implements,
# and for the rest a stub answering CUDA_ERROR_NOT_SUPPORTED (tests/simcuda/sim_api.h).
$(B)/gen/sim_entry.c: driver/cuda_api.def $(SIM_OBJ) scripts/gen-sim-entry
	@mkdir -p $(dir $@)
	$(call msg,GEN,$@)
	$(Q)$(PYTHON) scripts/gen-sim-entry driver/cuda_api.def $@ $(SIM_OBJ)

$(B)/obj/gen/sim_entry.o: $(B)/gen/sim_entry.c
	@mkdir -p $(dir $@)
	$(call msg,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(B)/gen/simcuda.map: driver/cuda_api.def Makefile
	@mkdir -p $(dir $@)
	$(call msg,GEN,$@)
	$(Q){ echo '{ global:'; echo '  cu*;'; echo '  sim_twin_*;'; echo '  simcuda_*;'; echo 'local: *; };'; } > $@

$(SIMLIB): $(SIM_OBJ) $(SIM_PRODUCT_OBJ) $(B)/obj/gen/sim_entry.o $(B)/gen/simcuda.map
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -o $@ $(SIM_OBJ) $(SIM_PRODUCT_OBJ) $(B)/obj/gen/sim_entry.o $(LDSAN) \
	  -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -Wl,-z,defs \
	  -Wl,--version-script=$(B)/gen/simcuda.map -ldl -lpthread -lm

$(B)/unit/sim_nvml: $(SIMNVML)

# sim_variant runs cufold's multi-instance variants on the software device: it links the
# generator and the PTX parser from the product (tests may use the product)
SIM_VARIANT_OBJ := $(B)/obj/rewrite/variant.o $(SIM_PRODUCT_OBJ)
$(B)/unit/sim_variant: $(SIM_VARIANT_OBJ)
$(B)/unit/sim_variant: TLIB_OBJ += $(SIM_VARIANT_OBJ)

# NVML's stand-in (PyTorch's allocator asks it with expandable_segments:True; nvml.c says why)
$(SIMNVML): tests/simcuda/nvml/nvml.c
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) -fvisibility=hidden -shared -fPIC -o $@ $< $(LDSAN) \
	  -Wl,-soname,libnvidia-ml.so.1 -Wl,-z,defs

$(B)/kernels/%.ptx: tests/kernels/%.cu
	@mkdir -p $(dir $@)
	$(call msg,NVCC,$<)
	$(Q)$(NVCC) -ptx -arch=compute_90 -o $@ $<

# Binary images of one kernel file in the forms nvcc writes, for tests/unit/sim_fatbin.c and
# test_driver_image.c: the default fatbin (nvcc 13: sm_75 code and zstd-compressed compute_75
# PTX), LZ4 (speed mode), two uncompressed PTX versions, PTX too new for the device, machine code
# only, a bare cubin, machine code compressed too (-Xfatbin -compress-all, LZ4 and zstd), and
# architecture-specific code (compute_90a, sm_90a).
FB_SRC  := tests/kernels/elementwise.cu
FATBINS := $(addprefix $(B)/kernels/elementwise,.fatbin .lz4.fatbin .plain.fatbin .new.fatbin .sass.fatbin .cubin \
             .all-lz4.fatbin .all-zstd.fatbin .a90.fatbin)
comma   := ,
FB_GEN  = -gencode arch=compute_$(1),code=$(2)
$(B)/kernels/elementwise.fatbin: NVFB = -fatbin
$(B)/kernels/elementwise.lz4.fatbin: NVFB = -fatbin --compress-mode=speed $(call FB_GEN,90,[compute_90$(comma)sm_90])
$(B)/kernels/elementwise.plain.fatbin: NVFB = -fatbin --compress-mode=none $(call FB_GEN,80,[compute_80$(comma)sm_80]) $(call FB_GEN,90,compute_90)
$(B)/kernels/elementwise.new.fatbin: NVFB = -fatbin $(call FB_GEN,100,compute_100)
$(B)/kernels/elementwise.sass.fatbin: NVFB = -fatbin $(call FB_GEN,80,sm_80) $(call FB_GEN,90,sm_90)
$(B)/kernels/elementwise.cubin: NVFB = -cubin -arch=sm_90
$(B)/kernels/elementwise.all-lz4.fatbin: NVFB = -fatbin -Xfatbin -compress-all --compress-mode=speed \
  $(call FB_GEN,90,[compute_90$(comma)sm_90])
$(B)/kernels/elementwise.all-zstd.fatbin: NVFB = -fatbin -Xfatbin -compress-all $(call FB_GEN,90,[compute_90$(comma)sm_90])
$(B)/kernels/elementwise.a90.fatbin: NVFB = -fatbin --compress-mode=none $(call FB_GEN,90a,[compute_90a$(comma)sm_90a])
$(FATBINS): $(FB_SRC)
	@mkdir -p $(dir $@)
	$(call msg,NVCC,$@)
	$(Q)$(NVCC) $(NVFB) -o $@ $<

$(B)/unit/sim_fatbin $(B)/unit/sim_device_cc: | $(FATBINS)

# Machine code only, for machine-code mode (tests/unit/sim_mcode.c): sm_90 as a fatbin and a bare
# cubin, and sm_80 (machine code the device cannot run).
MC_SRC  := tests/kernels/mcode.cu
MCODES  := $(addprefix $(B)/kernels/mcode,.sm90.fatbin .sm90.cubin .sm80.fatbin)
$(B)/kernels/mcode.sm90.fatbin: NVMC = -fatbin $(call FB_GEN,90,sm_90)
$(B)/kernels/mcode.sm90.cubin: NVMC = -cubin $(call FB_GEN,90,sm_90)
$(B)/kernels/mcode.sm80.fatbin: NVMC = -fatbin $(call FB_GEN,80,sm_80)
$(MCODES): $(MC_SRC)
	@mkdir -p $(dir $@)
	$(call msg,NVCC,$@)
	$(Q)$(NVCC) $(NVMC) -o $@ $<

$(B)/unit/sim_mcode: | $(MCODES)

# The decoder's unit test and the program that loads by every loader read the images above.
$(B)/progs/cap_images: | $(FATBINS) $(MCODES)
$(B)/unit/test_driver_image $(B)/unit/test_capture_images: CPPFLAGS += -DTEST_PTX_DIR='"$(abspath $(B)/kernels)"'
$(B)/unit/test_driver_image $(B)/unit/test_capture_images: | $(FATBINS) $(MCODES) $(KERNELS)

# Runtime-API programs (tests/cudart/*.cu) built by plain nvcc as users build them: with the
# shared and the static cudart, and compiled with --default-stream per-thread. They find the
# software device at run time (the runtime dlopens libcuda.so.1 from LD_LIBRARY_PATH). A
# sanitizer build instruments them too, so its runtime is loaded before the device's.
NVSAN        := $(if $(SAN),-Xcompiler -fsanitize=$(SAN))
.SECONDARY: $(CUDART_NAMES:%=$(B)/cudart/%.o) $(CUDART_NAMES:%=$(B)/cudart/%-ptds.o)
$(B)/cudart/%.o: tests/cudart/%.cu $(wildcard tests/cudart/*.cuh)
	@mkdir -p $(dir $@)
	$(call msg,NVCC,$<)
	$(Q)$(NVCC) -c $(NVSAN) -o $@ $<
$(B)/cudart/%-ptds.o: tests/cudart/%.cu $(wildcard tests/cudart/*.cuh)
	@mkdir -p $(dir $@)
	$(call msg,NVCC,$@)
	$(Q)$(NVCC) -c $(NVSAN) --default-stream per-thread -o $@ $<
$(B)/cudart/%-shared: $(B)/cudart/%.o
	$(call msg,NVLD,$@)
	$(Q)$(NVCC) $(NVSAN) -cudart shared -o $@ $<
$(B)/cudart/%-static: $(B)/cudart/%.o
	$(call msg,NVLD,$@)
	$(Q)$(NVCC) $(NVSAN) -cudart static -o $@ $<
$(B)/cudart/%-ptds: $(B)/cudart/%-ptds.o
	$(call msg,NVLD,$@)
	$(Q)$(NVCC) $(NVSAN) -cudart shared -o $@ $<

# Test programs and workloads are plain driver-API programs linked against the software device.
# Each is compiled and linked in one step; -MMD writes its header dependencies to <binary>.d.
PROG_LINK = $(LDSAN) -L$(B)/simcuda -l:libcuda.so.1 -ldl -lpthread -lm
$(B)/progs/%: tests/progs/%.c $(TLIB_OBJ) $(SIMLIB)
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -DTEST_PTX_DIR='"$(abspath $(B)/kernels)"' $< $(TLIB_OBJ) -o $@ $(PROG_LINK)

$(B)/workloads/%: tests/workloads/%.c $(wildcard tests/workloads/*.h) $(TLIB_OBJ) $(SIMLIB)
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) $< $(TLIB_OBJ) -o $@ $(PROG_LINK)

$(TLIB_OBJ): CPPFLAGS += -DTEST_PTX_DIR='"$(abspath $(B)/kernels)"'

$(B)/plugins/%.so: tests/plugins/%.c
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -shared $< -o $@ $(LDSAN)

$(B)/plugins/%.so: tests/plugins/%.cpp
	@mkdir -p $(dir $@)
	$(call msg,CXXLD,$@)
	$(Q)$(CXX) -shared -fPIC -g $(OPT) -Wall -Wextra $(SANFLAGS) $(DEPFLAGS) $< -o $@

$(B)/unit/sim_%: tests/unit/sim_%.c $(TLIB_OBJ) $(SIMLIB)
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -DTEST_PTX_DIR='"$(abspath $(B)/kernels)"' $< $(TLIB_OBJ) -o $@ \
	  $(PROG_LINK) -lcmocka

$(B)/unit/test_%: tests/unit/test_%.c $(CFARCH)
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -DTEST_CARDS_FILE='"$(abspath tests/kernels/test-kernels.cards)"' $< -o $@ \
		$(UNIT_OBJ) $(CFARCH) $(LDSAN) $(CF_LIBS) -lcmocka

# The derived-effects test checks test-kernel cards against the software device's oracle: it
# runs oracle_runner (against libcuda.so.1) on the test kernels' PTX.
$(B)/unit/test_derive_card: CPPFLAGS += -DTEST_PTX_DIR='"$(abspath $(B)/kernels)"' \
	-DTEST_DATA_PTX_DIR='"$(abspath tests/data/ptx)"' \
	-DTEST_ORACLE_RUNNER='"$(abspath $(B)/progs/oracle_runner)"' -DTEST_SIMLIB_DIR='"$(abspath $(B)/simcuda)"'
$(B)/unit/test_derive_card: | $(KERNELS) $(B)/progs/oracle_runner

# The corpus run of the derived cards (issue 23 part 5): a tool linked with libcufold.a, run by
# scripts/corpus-effects over every PTX kernel at hand.
$(B)/tools/corpus_effects: tests/unit/corpus_effects.c $(CFARCH)
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) $< -o $@ $(CFARCH) $(LDSAN) $(CF_LIBS)

corpus-effects: $(B)/tools/corpus_effects $(KERNELS) $(RW_PTX)
	@B=$(B) scripts/corpus-effects $(CORPUS_ARGS)

# A unit test links only the archive members it names, but the rewriter's fuzzer tests every
# registered rule: it gets every rule object, so a new rule file is registered there at once.
RULE_OBJ := $(filter $(B)/obj/rewrite/rules/%.o,$(CF_OBJ))
$(B)/unit/test_rewrite_fuzz: $(RULE_OBJ)
$(B)/unit/test_rewrite_fuzz: UNIT_OBJ = $(RULE_OBJ)

# Programs and device tests load the PTX and plugins at run time.
$(SIM_UNIT) $(PROGS) $(WORKLOADS): | $(KERNELS) $(PLUGINS)

# ---------------------------------------------------------------- commands
deps:
	@scripts/deps

# check-layers runs alongside the build, before the tests; the runner's summary is the last line.
test: deps
	@$(MAKE) --no-print-directory all check-layers
	@B=$(B) SAN=$(SAN) tests/run

demo: deps
	@$(MAKE) --no-print-directory all
	@B=$(B) scripts/demo

api:
	$(call msg,GEN,driver/cuda_api.def driver/cuda_api_flags.def)
	$(Q)$(PYTHON) scripts/gen-cuda-api driver/cuda_api.def

# No product file includes a header of a layer above its own (the layer list is in the script).
check-layers:
	@$(PYTHON) scripts/check-layers

# The committed list must be what the generator makes from this toolkit.
check-api:
	@mkdir -p $(B)/gen/check && $(PYTHON) scripts/gen-cuda-api $(B)/gen/check/cuda_api.def >/dev/null && \
	  cmp -s $(B)/gen/check/cuda_api.def driver/cuda_api.def && \
	  cmp -s $(B)/gen/check/cuda_api_flags.def driver/cuda_api_flags.def && \
	  echo "cuda_api.def and cuda_api_flags.def are current" || \
	  { echo "driver/cuda_api.def or cuda_api_flags.def differs from the toolkit and the generator: run make api"; \
	    exit 1; }

bench: all
	@B=$(B) scripts/bench

bench-grid: all
	@B=$(B) scripts/bench --grid

bench-overhead: all
	@B=$(B) scripts/bench-overhead

# The PTX interpreter's speed on one core (tests/progs/interp_bench.c; goal: 50 M simple
# instructions per second).
bench-interp: $(B)/progs/interp_bench $(SIMLIB)
	@LD_LIBRARY_PATH=$(abspath $(B)/simcuda) $(B)/progs/interp_bench

fault-sweep: all
	@B=$(B) scripts/fault-sweep --full

# Real clients of the driver, installed from PyPI into a virtual environment of the build folder
# (not part of make deps or make test: they need the network once, and the interpreter's time).
CLIENTS_VENV := $(B)/clients-venv
# numba_train.py switches cuda-core and numba-cuda to the driver's linker by private names: pinned.
# CuPy compiles with the toolkit's NVRTC (libnvrtc.so.13, found through run.sh's LD_LIBRARY_PATH).
CLIENTS_PIP  := cuda-bindings==13.4.4 cuda-core==1.2.2 numba-cuda==0.30.4 cupy-cuda13x==14.2.0
# the stamp is named by the list, so a venv made from an older list is completed
CLIENTS_STAMP := $(CLIENTS_VENV)/.installed-$(shell echo '$(CLIENTS_PIP)' | cksum | cut -d' ' -f1)

deps-clients: $(CLIENTS_STAMP)

$(CLIENTS_STAMP):
	$(call msg,VENV,$(CLIENTS_VENV))
	$(Q)$(PYTHON) -m venv $(CLIENTS_VENV) && $(CLIENTS_VENV)/bin/pip install -q $(CLIENTS_PIP) && touch $@

test-clients: all deps-clients
	@B=$(B) CLIENTS_VENV=$(CLIENTS_VENV) tests/clients/run.sh

# PyTorch on the software device in machine-code mode (issue 25): not part of make deps, make test
# or CI (the wheels are about 5 GB, from PyPI). The wheel is built for CUDA 13.2, which runs on
# the software device's 13.0 driver by minor-version compatibility; the recipe checks it is 13.x.
TORCH_VENV := $(B)/torch-venv
TORCH_PIP  := torch==2.15.0

deps-torch: $(TORCH_VENV)/.installed

$(TORCH_VENV)/.installed:
	$(call msg,VENV,$(TORCH_VENV))
	$(Q)$(PYTHON) -m venv $(TORCH_VENV) && $(TORCH_VENV)/bin/pip install -q $(TORCH_PIP) && \
		$(TORCH_VENV)/bin/python -c 'import torch, sys; v = torch.version.cuda or ""; \
			sys.exit(0 if v.startswith("13.") else "torch is built for CUDA %s, not 13.x" % v)' && touch $@

# Skipped with one line when make deps-torch has not been run.
test-torch: all
	@B=$(B) TORCH_VENV=$(TORCH_VENV) tests/clients/torch_run.sh; \
		rc=$$?; [ $$rc -eq 77 ] && rc=0; exit $$rc

clean:
	rm -rf build

# ---------------------------------------------------------------- install
#   make install PREFIX=/usr/local [DESTDIR=/staging]   make uninstall (removes exactly those files)
# The man page is generated from the README's variable table and cufold's --help (scripts/gen-man).
# The man page names the installed paths (PREFIX, not DESTDIR) and the version: it is made again
# by every install (make man: the page for this PREFIX, in $(B)/man). The installed command gets
# the version written in (in the source tree it reads the file VERSION).
PREFIX  ?= /usr/local
DESTDIR ?=
IDIR    := $(DESTDIR)$(PREFIX)
CARDS   := tests/data/cards/example.cards tests/kernels/test-kernels.cards
CUFOLD_VERSION := $(shell cat VERSION 2>/dev/null || echo unknown)
INSTALLED := $(IDIR)/lib/libcufold.so $(IDIR)/bin/cufold $(IDIR)/share/man/man1/cufold.1 \
             $(IDIR)/share/doc/cufold/README.md $(addprefix $(IDIR)/share/cufold/,$(notdir $(CARDS)))

man:
	@mkdir -p $(B)/man
	$(call msg,GEN,$(B)/man/cufold.1)
	$(Q)$(PYTHON) scripts/gen-man --prefix $(PREFIX) --version $(CUFOLD_VERSION) README.md scripts/cufold \
	  $(B)/man/cufold.1

install: $(CFLIB) man
	$(call msg,INSTALL,$(IDIR))
	$(Q)install -d $(IDIR)/lib $(IDIR)/bin $(IDIR)/share/man/man1 $(IDIR)/share/cufold $(IDIR)/share/doc/cufold
	$(Q)install -m 755 $(CFLIB) $(IDIR)/lib/libcufold.so
	$(Q)sed 's/@CUFOLD_VERSION@/$(CUFOLD_VERSION)/' scripts/cufold >$(IDIR)/bin/cufold.tmp && \
	  chmod 755 $(IDIR)/bin/cufold.tmp && mv -f $(IDIR)/bin/cufold.tmp $(IDIR)/bin/cufold
	$(Q)install -m 644 $(B)/man/cufold.1 $(IDIR)/share/man/man1/cufold.1
	$(Q)install -m 644 README.md $(IDIR)/share/doc/cufold/README.md
	$(Q)install -m 644 $(CARDS) $(IDIR)/share/cufold/

uninstall:
	$(call msg,RM,$(IDIR))
	$(Q)rm -f $(INSTALLED)
	$(Q)rmdir $(IDIR)/share/cufold $(IDIR)/share/doc/cufold 2>/dev/null || true

-include $(shell find $(B)/obj $(B)/unit $(B)/progs $(B)/workloads $(B)/plugins -name '*.d' 2>/dev/null)
