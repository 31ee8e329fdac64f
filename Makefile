# Orrery: `make demo` and `make test` are all a fresh Debian 12 machine needs.
#   make demo              install missing packages, build, run the default scenario
#   make test              ... and run every test (ctest)
#   make test SANITIZE=1   the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench             benchmarks; figures in build/bench/results.json
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

.PHONY: all deps configure build demo test bench clean

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
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# Benchmarks always use the optimised, unsanitised build, with the bench-only packages.
bench:
	@bash scripts/install-deps.sh --bench
	@$(MAKE) --no-print-directory build SANITIZE=0 BUILD_DIR=build
	@mkdir -p build/bench
	build/bin/orrery_bench --out build/bench/results.json

clean:
	rm -rf build build-sanitize build.configure.log build-sanitize.configure.log
