# The project's C++ libraries for a cross build. Debian installs them for the
# host architecture only, but all but cpp-httplib have a header-only form:
# fmt and spdlog (FMT_HEADER_ONLY, SPDLOG_HEADER_ONLY), nlohmann-json, xxhash
# (XXH_INLINE_ALL), and GoogleTest builds from its Debian sources
# (/usr/src/googletest). The headers are linked into a staging folder so the
# cross compiler never searches the host's /usr/include.
set(stage ${PROJECT_BINARY_DIR}/cross-include)
file(MAKE_DIRECTORY ${stage})
foreach(h fmt spdlog nlohmann xxhash.h)
  if(NOT EXISTS /usr/include/${h})
    message(FATAL_ERROR "cross build: /usr/include/${h} missing (scripts/setup.sh installs it)")
  endif()
  file(CREATE_LINK /usr/include/${h} ${stage}/${h} SYMBOLIC)
endforeach()

add_library(fmt::fmt INTERFACE IMPORTED)
set_target_properties(fmt::fmt PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${stage}
                      INTERFACE_COMPILE_DEFINITIONS "FMT_HEADER_ONLY=1")
add_library(spdlog::spdlog INTERFACE IMPORTED)
set_target_properties(spdlog::spdlog PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${stage}
                      INTERFACE_COMPILE_DEFINITIONS "SPDLOG_HEADER_ONLY;SPDLOG_FMT_EXTERNAL"
                      INTERFACE_LINK_LIBRARIES fmt::fmt)
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
set_target_properties(nlohmann_json::nlohmann_json PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${stage})
add_library(xxhash INTERFACE IMPORTED)
set_target_properties(xxhash PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${stage}
                      INTERFACE_COMPILE_DEFINITIONS "XXH_INLINE_ALL")

if(FOLIO_BUILD_TESTS)
  if(NOT EXISTS /usr/src/googletest/CMakeLists.txt)
    message(FATAL_ERROR "cross build: /usr/src/googletest missing (Debian package googletest)")
  endif()
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
  add_subdirectory(/usr/src/googletest ${PROJECT_BINARY_DIR}/googletest EXCLUDE_FROM_ALL SYSTEM)
endif()
