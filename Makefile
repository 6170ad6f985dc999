# edgedecode: the two commands a new user runs are `make demo` and `make test`.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all setup build demo test test-asan bench clean

all: build

setup:
	@bash tools/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The main job: a deploy check of this machine for a TinyLlama-class model.
demo: build
	@bash tools/demo.sh $(BUILD)/edgedecode

# Whole suite (Release), then the bad-input suite under AddressSanitizer + UBSan.
test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 1500
	@$(MAKE) --no-print-directory test-asan

test-asan: setup
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DEDGEDECODE_SANITIZE=ON $(CMAKE_ARGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -L asan --timeout 1500

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
