# liboffgraph.so: the C API (include/offgraph/offgraph.h) over the engine's
# static libraries and nothing else (no command line, no server: linking it
# pulls in none of the server's dependencies such as libzmq), exporting only the
# og_* functions the header declares (hidden visibility, a version script, and
# the static libraries' symbols kept local), with SONAME liboffgraph.so.0.
# The `offgraph` program links the command line and the server itself.
# `cmake --install` puts the library, the headers, offgraph.pc, the CMake
# package (find_package(offgraph)), the command and the Python module under the
# prefix.
include(GNUInstallDirs)

file(GLOB og_c_api_srcs CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/src/api/c_api_*.cpp")
add_library(og_shared SHARED ${og_c_api_srcs})
set_target_properties(og_shared PROPERTIES
  OUTPUT_NAME offgraph
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON
  LINK_DEPENDS "${CMAKE_SOURCE_DIR}/cmake/offgraph.map")
target_compile_definitions(og_shared PRIVATE OG_BUILDING_LIBRARY)
target_include_directories(og_shared
  PUBLIC "$<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>" "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>"
  PRIVATE "${CMAKE_SOURCE_DIR}/src")
target_link_libraries(og_shared PRIVATE og_runtime)
target_link_options(og_shared PRIVATE
  "LINKER:--version-script=${CMAKE_SOURCE_DIR}/cmake/offgraph.map"
  "LINKER:--exclude-libs,ALL")
# Every symbol resolved at link time. Not in a clang sanitizer tree: clang puts
# the ASan runtime into executables only, so a shared library's calls into it
# are resolved when the (instrumented) program loads it.
if(NOT (OG_SANITIZE AND CMAKE_CXX_COMPILER_ID MATCHES "Clang"))
  target_link_options(og_shared PRIVATE "LINKER:--no-undefined")
endif()
add_library(offgraph::offgraph ALIAS og_shared)

# The `offgraph` program: the command line and the server (apps/, og_cli) over
# the same static libraries as liboffgraph.so, linked into the program itself.
add_executable(offgraph "${CMAKE_SOURCE_DIR}/apps/program/main.c" "${CMAKE_SOURCE_DIR}/apps/cli_main.cpp")
target_link_libraries(offgraph PRIVATE og_cli)
target_include_directories(offgraph PRIVATE "${CMAKE_SOURCE_DIR}/include")  # OG_VERSION_STRING

# Headers only (C and C++ front ends compile against these; nothing from src/).
install(DIRECTORY "${CMAKE_SOURCE_DIR}/include/offgraph" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(TARGETS og_shared LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")
install(TARGETS offgraph RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")

# Relocatable: the prefix is found from the .pc file's own place, so any --prefix works.
file(RELATIVE_PATH OG_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file("${CMAKE_SOURCE_DIR}/cmake/offgraph.pc.in" "${CMAKE_BINARY_DIR}/offgraph.pc" @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/offgraph.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

include(CMakePackageConfigHelpers)
write_basic_package_version_file("${CMAKE_BINARY_DIR}/offgraphConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
file(RELATIVE_PATH OG_CONFIG_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/cmake/offgraph" "/prefix")
configure_file("${CMAKE_SOURCE_DIR}/cmake/offgraphConfig.cmake.in" "${CMAKE_BINARY_DIR}/offgraphConfig.cmake" @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/offgraphConfig.cmake" "${CMAKE_BINARY_DIR}/offgraphConfigVersion.cmake"
  DESTINATION "${CMAKE_INSTALL_LIBDIR}/cmake/offgraph")

# The Python module (python/): built into build/python when pybind11 and
# Debian's python3 are there; installed into that interpreter's dist-packages.
set(OG_PYTHON "/usr/bin/python3" CACHE FILEPATH "The Python interpreter the module is built for")
set(Python_EXECUTABLE "${OG_PYTHON}")
set(PYBIND11_FINDPYTHON ON)
find_package(pybind11 CONFIG QUIET)
if(pybind11_FOUND AND EXISTS "${CMAKE_SOURCE_DIR}/python/offgraph_module.cpp")
  set(OG_PYTHON_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/python${Python_VERSION_MAJOR}.${Python_VERSION_MINOR}/dist-packages"
      CACHE STRING "Where cmake --install puts the Python package (relative to the prefix)")
  # The installed extension finds liboffgraph.so relative to itself, whatever the prefix.
  file(RELATIVE_PATH _og_up "/prefix/${OG_PYTHON_INSTALL_DIR}/offgraph" "/prefix/${CMAKE_INSTALL_LIBDIR}")
  set(OG_PY_RPATH "$ORIGIN/${_og_up}")
  pybind11_add_module(og_python MODULE "${CMAKE_SOURCE_DIR}/python/offgraph_module.cpp")
  set_target_properties(og_python PROPERTIES
    OUTPUT_NAME _offgraph
    LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/python/offgraph"
    INSTALL_RPATH "${OG_PY_RPATH}")
  target_link_libraries(og_python PRIVATE og_shared)
  # The pure-Python part and the stubs beside the extension.
  file(GLOB og_py_files CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/python/offgraph/*.py"
       "${CMAKE_SOURCE_DIR}/python/offgraph/*.pyi" "${CMAKE_SOURCE_DIR}/python/offgraph/py.typed")
  set(og_py_outputs "")
  foreach(f ${og_py_files})
    get_filename_component(n "${f}" NAME)
    set(o "${CMAKE_BINARY_DIR}/python/offgraph/${n}")
    add_custom_command(OUTPUT "${o}" DEPENDS "${f}" COMMAND ${CMAKE_COMMAND} -E copy "${f}" "${o}")
    list(APPEND og_py_outputs "${o}")
  endforeach()
  # python3 -m offgraph runs the `offgraph` program: the build tree's, or the
  # installed one found relative to the installed package.
  file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/python/offgraph/_program.py"
       CONTENT "# Generated by cmake/library.cmake: the build tree's offgraph program.\nPROGRAM = \"$<TARGET_FILE:offgraph>\"\n")
  file(RELATIVE_PATH _og_py_to_bin "/prefix/${OG_PYTHON_INSTALL_DIR}/offgraph" "/prefix/${CMAKE_INSTALL_BINDIR}")
  file(WRITE "${CMAKE_BINARY_DIR}/python-install/_program.py"
       "# Generated by cmake/library.cmake: the installed offgraph program, relative to this package.\n"
       "import os\nPROGRAM = os.path.normpath(os.path.join(os.path.dirname(__file__), \"${_og_py_to_bin}\", \"offgraph\"))\n")
  install(FILES "${CMAKE_BINARY_DIR}/python-install/_program.py" DESTINATION "${OG_PYTHON_INSTALL_DIR}/offgraph")
  add_custom_target(og_python_files ALL DEPENDS ${og_py_outputs})
  add_dependencies(og_python og_python_files)
  install(TARGETS og_python LIBRARY DESTINATION "${OG_PYTHON_INSTALL_DIR}/offgraph")
  install(FILES ${og_py_files} DESTINATION "${OG_PYTHON_INSTALL_DIR}/offgraph")
else()
  message(STATUS "pybind11 not found: the Python module is not built (scripts/setup.sh installs it)")
endif()
