# Test and header-only dependencies of the core for a cross build, from the host's Debian packages
# without their host libraries: GoogleTest is compiled from /usr/src/googletest (libgtest-dev) for the
# target; nlohmann-json and CLI11 are header-only, but their CMake packages point at /usr/include, which
# would put the host's C library headers before the target's, so only their own directories are
# exposed, through links in the build tree.
set(EDGEDECODE_GTEST_SOURCE /usr/src/googletest CACHE PATH "GoogleTest sources to build for the target")
set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
add_subdirectory(${EDGEDECODE_GTEST_SOURCE} ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL SYSTEM)
# Not our code: its warnings under this project's -Wall -Wextra are noise here.
target_compile_options(gtest PRIVATE -w)
target_compile_options(gtest_main PRIVATE -w)

set(ED_HOST_HEADERS ${CMAKE_BINARY_DIR}/host-headers)
file(MAKE_DIRECTORY ${ED_HOST_HEADERS})
foreach(dir nlohmann CLI)
  if(NOT EXISTS /usr/include/${dir})
    message(FATAL_ERROR "/usr/include/${dir} missing (tools/setup.sh installs nlohmann-json3-dev and libcli11-dev)")
  endif()
  file(CREATE_LINK /usr/include/${dir} ${ED_HOST_HEADERS}/${dir} SYMBOLIC)
endforeach()
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
set_target_properties(nlohmann_json::nlohmann_json PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${ED_HOST_HEADERS})
add_library(CLI11::CLI11 INTERFACE IMPORTED)
set_target_properties(CLI11::CLI11 PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${ED_HOST_HEADERS})
