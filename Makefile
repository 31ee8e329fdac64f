# Orrery: `make demo` and `make test` are all a fresh Debian 12 machine needs.
#   make demo              install missing packages, build, run the default scenario
#   make test              ... and run every test (ctest)
#   make test SANITIZE=1   the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench             benchmarks; figures in build/bench/results.json
#   make fuzz              libFuzzer campaigns on every reader (clang): FUZZ_SECONDS each, FUZZ_JOBS at once
#                          (FUZZ_MODE=cpu: FUZZ_SECONDS of each target's own CPU time, for a busy machine)
#   make WERROR=1 ...      warnings are errors (CI)
SANITIZE ?= 0
WERROR ?= 0
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)

ifeq ($(SANITIZE),1)
BUILD_DIR ?= build-sanitize
else
BUILD_DIR ?= build
endif
SANITIZE_FLAG := $(if $(filter 1,$(SANITIZE)),ON,OFF)
WERROR_FLAG := $(if $(filter 1,$(WERROR)),ON,OFF)
ORRERY := $(BUILD_DIR)/bin/orrery

.PHONY: all deps configure build demo test bench fuzz clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DORRERY_SANITIZE=$(SANITIZE_FLAG) -DORRERY_WERROR=$(WERROR_FLAG) > $(BUILD_DIR).configure.log \
	  || (cat $(BUILD_DIR).configure.log; exit 1)

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	$(ORRERY) step --trace $(BUILD_DIR)/demo-trace.json --report $(BUILD_DIR)/demo-report.json
	@echo "timeline: $(BUILD_DIR)/demo-trace.json (open in https://ui.perfetto.dev); report: $(BUILD_DIR)/demo-report.json"

test: build
	@rm -f $(BUILD_DIR)/tests/skipped.log
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)
	@bash scripts/report-skips.sh $(BUILD_DIR)/tests/skipped.log

# Benchmarks always use the optimised, unsanitised build, with the bench-only packages.
bench:
	@bash scripts/install-deps.sh --bench
	@$(MAKE) --no-print-directory build SANITIZE=0 BUILD_DIR=build
	@cmake --build build -j $(JOBS) --target orrery_benchmarks
	@mkdir -p build/bench
	build/bin/orrery_bench --out build/bench/results.json

# Coverage-guided fuzzing of every reader with libFuzzer (clang 16 from Debian, ASan + UBSan).
# `make test` runs the same targets briefly, without libFuzzer, over their seed corpora.
FUZZ_SECONDS ?= 60
FUZZ_MODE ?= wall
FUZZ_JOBS ?= $(JOBS)
fuzz:
	@bash scripts/install-deps.sh --fuzz
	@cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-16 \
	  -DCMAKE_CXX_COMPILER=clang++-16 -DORRERY_FUZZ=ON -DORRERY_BUILD_TESTS=OFF -DORRERY_BUILD_BENCH=OFF \
	  -DORRERY_CUDA=OFF -DORRERY_MPI=OFF -DORRERY_PYTHON=OFF > build-fuzz.configure.log || (cat build-fuzz.configure.log; exit 1)
	@cmake --build build-fuzz -j $(JOBS) --target orrery_fuzz_targets
	@bash fuzz/run.sh build-fuzz $(FUZZ_SECONDS) $(FUZZ_JOBS) $(FUZZ_MODE)

clean:
	rm -rf build build-sanitize build-fuzz build.configure.log build-sanitize.configure.log build-fuzz.configure.log
