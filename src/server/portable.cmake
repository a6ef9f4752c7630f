# The server's Linux calls (epoll, eventfd, accept4, pipe2), found by feature
# tests, not by the system's name, and defined only for the two files that use
# them (poller.cpp, socket_ops.cpp); everything else outside src/kernels is
# POSIX. -DOFFGRAPH_PORTABLE_ONLY=ON compiles their POSIX fallbacks alone, as
# a system without those calls (macOS) would. At run time OFFGRAPH_PORTABLE=1
# takes the fallbacks even where the fast paths are compiled (docs/arm.md).
option(OFFGRAPH_PORTABLE_ONLY "Compile only the POSIX fallbacks of the server's Linux calls" OFF)
set(og_portable_defs "")
if(OFFGRAPH_PORTABLE_ONLY)
  list(APPEND og_portable_defs OFFGRAPH_PORTABLE_ONLY=1)
else()
  include(CheckCXXSymbolExists)
  check_cxx_symbol_exists(epoll_create1 "sys/epoll.h" OG_HAVE_EPOLL)
  check_cxx_symbol_exists(eventfd "sys/eventfd.h" OG_HAVE_EVENTFD)
  check_cxx_symbol_exists(accept4 "sys/socket.h" OG_HAVE_ACCEPT4)
  check_cxx_symbol_exists(pipe2 "unistd.h" OG_HAVE_PIPE2)
  foreach(f EPOLL EVENTFD ACCEPT4 PIPE2)
    if(OG_HAVE_${f})
      list(APPEND og_portable_defs OG_HAVE_${f}=1)
    endif()
  endforeach()
endif()
set_source_files_properties("${CMAKE_SOURCE_DIR}/src/server/poller.cpp" "${CMAKE_SOURCE_DIR}/src/server/socket_ops.cpp"
                            PROPERTIES COMPILE_DEFINITIONS "${og_portable_defs}")
