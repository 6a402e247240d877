# tilecConfig.cmake: find_package(tilec) for a CMake project that compiles .tile kernels into C
# launchers at build time and links them with libtilert. Installed by `make install` into
# PREFIX/lib/cmake/tilec; found from PREFIX (CMAKE_PREFIX_PATH) wherever that tree was moved.
#
#   find_package(tilec REQUIRED)
#   add_executable(app app.c)
#   tilec_add_kernels(app FILES kernels/softmax.tile kernels/matmul.tile
#                     [ARCH sm_80,sm_90a] [DEFINES BM=128 BN=256] [OPTIONS -w])
#
# Gives TILEC_EXECUTABLE, the imported library tilec::tilert (libtilert.a with its include
# directory, the CUDA driver library and threads), and tilec_add_kernels, which for each FILE
# runs `tilec --emit=c` into the target's binary directory (NAME.c, NAME.h), rerun when the
# .tile, the compiler or the options change, adds the .c to TARGET, puts the .h on its include
# path and links tilec::tilert. ARCH defaults to sm_80,sm_90a: sm_80 PTX that every later GPU
# JIT-compiles, and an sm_90a cubin with Hopper's fast paths (ptxas must be at hand: it comes
# with the CUDA toolkit).
cmake_minimum_required(VERSION 3.18)

get_filename_component(_tilec_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

include(CMakeFindDependencyMacro)
find_dependency(CUDAToolkit)   # cuda.h, which tilert.h includes, and CUDA::cuda_driver
find_dependency(Threads)

set(TILEC_EXECUTABLE "${_tilec_prefix}/bin/tilec" CACHE FILEPATH "the tilec compiler")

if(NOT TARGET tilec::tilert)
  add_library(tilec::tilert STATIC IMPORTED)
  set_target_properties(tilec::tilert PROPERTIES
    IMPORTED_LOCATION "${_tilec_prefix}/lib/libtilert.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_tilec_prefix}/include"
    INTERFACE_LINK_LIBRARIES "CUDA::cuda_driver;Threads::Threads;m")
endif()

function(tilec_add_kernels target)
  cmake_parse_arguments(TK "" "ARCH" "FILES;DEFINES;OPTIONS" ${ARGN})
  if(TK_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tilec_add_kernels: unknown arguments: ${TK_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TK_FILES)
    message(FATAL_ERROR "tilec_add_kernels(${target}): no FILES")
  endif()
  if(NOT TK_ARCH)
    set(TK_ARCH "sm_80,sm_90a")
  endif()
  set(defines "")
  foreach(d IN LISTS TK_DEFINES)
    list(APPEND defines -D "${d}")
  endforeach()
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/tilec_${target}")
  foreach(f IN LISTS TK_FILES)
    get_filename_component(src "${f}" ABSOLUTE)
    get_filename_component(name "${f}" NAME_WE)
    set(out_c "${dir}/${name}.c")
    set(out_h "${dir}/${name}.h")
    add_custom_command(
      OUTPUT "${out_c}" "${out_h}"
      COMMAND "${CMAKE_COMMAND}" -E make_directory "${dir}"
      COMMAND "${TILEC_EXECUTABLE}" --emit=c "--arch=${TK_ARCH}" ${defines} ${TK_OPTIONS} -o "${out_c}" "${src}"
      DEPENDS "${src}" "${TILEC_EXECUTABLE}"
      COMMENT "tilec ${f}"
      VERBATIM)
    target_sources(${target} PRIVATE "${out_c}" "${out_h}")
  endforeach()
  target_include_directories(${target} PRIVATE "${dir}")
  target_link_libraries(${target} PRIVATE tilec::tilert)
endfunction()
