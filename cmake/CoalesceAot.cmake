# coalesce_add_generator(<target> SOURCES <file>...)
#
# A shared library of the user's own generators (files that include
# "runtime/aot/Generator.h" and use COALESCE_REGISTER_GENERATOR), linked
# against Coalesce::coalesce only. coalesce_add_aot_library(... GENERATOR_LIBRARY
# <target>) has the AOT tool load it and compile one of its generators:
#
#   coalesce_add_generator(my_generators SOURCES silu_gemm.cpp)
#   coalesce_add_aot_library(silu_gemm GENERATOR_LIBRARY my_generators GENERATOR silu_gemm
#                            PARAMS K=4096)
#
# coalesce_add_aot_library(<target>
#     [GENERATOR <name>]          the generator (default: the tool's only one)
#     [GENERATOR_LIBRARY <lib>]   a coalesce_add_generator() target whose generators the tool
#                                 loads first (--generator-library)
#     [FUNCTION_NAME <name>]      the launcher's name, a C identifier (default: <target>)
#     [GPU_TARGET <sm>]           sm_80, sm_86, sm_89, sm_90 or sm_90a (default: the tool's, sm_90a)
#     [TOOL <target-or-path>]     an AOT tool (default: Coalesce::coalesce-aot)
#     [PARAMS <key=value>...]     the generator's parameters, as the tool's flags without "--"
#     [CUBIN]                     embed the cubin ptxas assembles for GPU_TARGET too (--cubin):
#                                 loaded first, the PTX the fallback
#     [NO_DRIVER])                link no CUDA driver (the program brings its own cu* functions)
#
# Runs the AOT tool at build time (again whenever the tool changes) and
# returns a static library <target> holding the launcher, with the generated
# header <FUNCTION_NAME>.h on its include path. The launcher needs only the
# CUDA Driver API: <target> links CUDA::cuda_driver (from find_package
# (CUDAToolkit), done here if the caller has not), nothing of LLVM or Coalesce.
#
#   coalesce_add_aot_library(gemm_bias_gelu PARAMS bias=true activation=gelu)
#   target_link_libraries(my_app PRIVATE gemm_bias_gelu)   # #include "gemm_bias_gelu.h"
#
# A wrong argument fails at configure time, naming it; a wrong generator
# parameter fails the build with the tool's message, and the tool writes
# nothing, so no half-written launcher is ever compiled.

function(coalesce_add_generator target)
  cmake_parse_arguments(PARSE_ARGV 1 GEN "" "" "SOURCES")
  if(GEN_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "coalesce_add_generator(${target}): unknown arguments: ${GEN_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT GEN_SOURCES)
    message(FATAL_ERROR "coalesce_add_generator(${target}): no SOURCES")
  endif()
  add_library(${target} MODULE ${GEN_SOURCES})
  target_link_libraries(${target} PRIVATE Coalesce::coalesce)
  target_compile_features(${target} PRIVATE cxx_std_17)
endfunction()

function(coalesce_add_aot_library target)
  cmake_parse_arguments(PARSE_ARGV 1 AOT "NO_DRIVER;CUBIN" "GENERATOR;GENERATOR_LIBRARY;FUNCTION_NAME;GPU_TARGET;TOOL"
                        "PARAMS")
  if(AOT_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "coalesce_add_aot_library(${target}): unknown arguments: ${AOT_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT AOT_FUNCTION_NAME)
    set(AOT_FUNCTION_NAME "${target}")
  endif()
  if(NOT AOT_FUNCTION_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "coalesce_add_aot_library(${target}): FUNCTION_NAME '${AOT_FUNCTION_NAME}' is not a C "
                        "identifier; give FUNCTION_NAME explicitly")
  endif()
  if(NOT AOT_TOOL)
    set(AOT_TOOL Coalesce::coalesce-aot)
  endif()
  if(TARGET ${AOT_TOOL})
    set(tool_command "$<TARGET_FILE:${AOT_TOOL}>")
  elseif(EXISTS "${AOT_TOOL}")
    set(tool_command "${AOT_TOOL}")
  else()
    message(FATAL_ERROR "coalesce_add_aot_library(${target}): TOOL '${AOT_TOOL}' is neither a target nor a file")
  endif()

  set(flags "--name=${AOT_FUNCTION_NAME}" "--emit=header,launcher")
  set(depends ${AOT_TOOL})
  if(AOT_GENERATOR_LIBRARY)
    if(NOT TARGET ${AOT_GENERATOR_LIBRARY})
      message(FATAL_ERROR "coalesce_add_aot_library(${target}): GENERATOR_LIBRARY '${AOT_GENERATOR_LIBRARY}' is not "
                          "a target; make it with coalesce_add_generator()")
    endif()
    list(APPEND flags "--generator-library=$<TARGET_FILE:${AOT_GENERATOR_LIBRARY}>")
    list(APPEND depends ${AOT_GENERATOR_LIBRARY})
  endif()
  if(AOT_GENERATOR)
    list(APPEND flags "--generator=${AOT_GENERATOR}")
  endif()
  if(AOT_GPU_TARGET)
    list(APPEND flags "--target=${AOT_GPU_TARGET}")
  endif()
  if(AOT_CUBIN)
    list(APPEND flags "--cubin")
  endif()
  foreach(param IN LISTS AOT_PARAMS)
    if(NOT param MATCHES "^[A-Za-z][A-Za-z0-9_-]*=.")
      message(FATAL_ERROR "coalesce_add_aot_library(${target}): PARAMS entry '${param}' is not key=value")
    endif()
    list(APPEND flags "--${param}")
  endforeach()

  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${target}.coalesce")
  set(header "${dir}/${AOT_FUNCTION_NAME}.h")
  set(source "${dir}/${AOT_FUNCTION_NAME}.cpp")
  add_custom_command(
    OUTPUT "${header}" "${source}"
    COMMAND "${tool_command}" ${flags} "--output-dir=${dir}"
    DEPENDS ${depends}
    COMMENT "coalesce-aot: ${AOT_FUNCTION_NAME}.h and ${AOT_FUNCTION_NAME}.cpp"
    VERBATIM)

  add_library(${target} STATIC "${source}" "${header}")
  target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${dir}>")
  target_compile_features(${target} PUBLIC cxx_std_17)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(NOT TARGET CUDA::toolkit)
    find_package(CUDAToolkit REQUIRED)
  endif()
  if(AOT_NO_DRIVER)
    target_link_libraries(${target} PUBLIC CUDA::toolkit)
  else()
    target_link_libraries(${target} PUBLIC CUDA::cuda_driver)
  endif()
endfunction()
