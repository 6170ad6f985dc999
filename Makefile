# edgedecode: the two commands a new user runs are `make demo` and `make test`.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all setup build demo test test-asan test-fuzz fuzz bench clean

all: build

setup:
	@bash tools/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The main job: a deploy check of this machine for a TinyLlama-class model.
demo: build
	@bash tools/demo.sh $(BUILD)/edgedecode

# Whole suite (Release), then the bad-input suite under AddressSanitizer + UBSan, then a short fuzzing campaign.
test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 1500
	@$(MAKE) --no-print-directory test-asan
	@$(MAKE) --no-print-directory test-fuzz

test-asan: setup
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DEDGEDECODE_SANITIZE=ON $(CMAKE_ARGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -L asan --timeout 1500

# libFuzzer harnesses (clang, ASan + UBSan; docs/fuzzing.md): FUZZ_SECONDS per harness, FUZZ=NAME for one.
FUZZ_SECONDS ?= 15
FUZZ ?=
fuzz: setup
	@JOBS=$(JOBS) bash fuzz/fuzz.sh build $(FUZZ_BUILD)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) bash fuzz/fuzz.sh run $(FUZZ_BUILD) $(FUZZ)

# The bounded campaign `make test` ends with: every harness for FUZZ_CI_SECONDS, quick seeds only.
FUZZ_CI_SECONDS ?= 20
test-fuzz: setup
	@JOBS=$(JOBS) bash fuzz/fuzz.sh build $(FUZZ_BUILD)
	@FUZZ_QUICK=1 FUZZ_SEED=1 FUZZ_SECONDS=$(FUZZ_CI_SECONDS) bash fuzz/fuzz.sh run $(FUZZ_BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
