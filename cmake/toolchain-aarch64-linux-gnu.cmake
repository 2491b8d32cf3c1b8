# Cross build for 64-bit ARM Linux with Debian's toolchain
# (g++-aarch64-linux-gnu); the binaries and tests run under qemu-user
# (qemu-aarch64, with the cross toolchain's libraries as its root).
#
#   cmake -S . -B build-arm -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake
#
# scripts/test-arm.sh does this and runs the tests. Debian ships the
# project's libraries for the host only, so a cross build takes the
# header-only forms (cmake/cross_deps.cmake) and leaves out the HTTP server
# and the folio command (FOLIO_SERVING).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(FOLIO_CROSS_ROOT /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH ${FOLIO_CROSS_ROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# ctest (and gtest_discover_tests) run the test binaries through qemu. The
# CPU model is chosen per run by FOLIO_QEMU_CPU (scripts/test-arm.sh).
set(CMAKE_CROSSCOMPILING_EMULATOR ${CMAKE_CURRENT_LIST_DIR}/../scripts/qemu-aarch64.sh)
