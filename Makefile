# Short commands over CMake/CTest. `make test` and `make demo` do their own set-up.
BUILD   ?= build
ASAN    ?= build-asan
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps test test-asan asan-build test-fast demo bench clean

all: $(BUILD)/Makefile
	@cmake --build $(BUILD) -j $(JOBS)

deps:
	@sh scripts/deps.sh deps.txt

$(BUILD)/Makefile:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null

$(ASAN)/Makefile:
	@cmake -S . -B $(ASAN) -DCMAKE_BUILD_TYPE=Debug -DKF_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null

# Every test, in the normal build and then under ASan+UBSan; the last line of each
# run is "N passed, N failed, N skipped".
test: deps
	@$(MAKE) --no-print-directory all asan-build
	@sh scripts/check-symbols.sh $(BUILD)
	@sh scripts/check-banned.sh
	@sh scripts/check-layers.sh $(BUILD)
	@sh scripts/test.sh $(BUILD) $(ASAN)

asan-build: $(ASAN)/Makefile
	@cmake --build $(ASAN) -j $(JOBS)

# The ASan+UBSan build's tests alone.
test-asan: asan-build
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 $(ASAN)/kf-tests

# The fast tier (tests/test-list.h) of the normal build: the edit-compile-test loop.
test-fast: all
	@$(BUILD)/kf-tests --fast

demo: deps
	@$(MAKE) --no-print-directory all
	@sh scripts/demo.sh $(BUILD)

bench: all
	@sh bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN)
