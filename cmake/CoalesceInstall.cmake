# Install rules and the CMake package (find_package(Coalesce)):
#
#   lib/libcoalesce.so                   Coalesce::coalesce
#   bin/coalesce-aot                     Coalesce::coalesce-aot
#   include/coalesce/{dsl,scheduler,codegen,runtime}/*.h
#   include/coalesce/runtime/aot/Generator.h   for a user's generators
#   lib/cmake/Coalesce/                  CoalesceConfig.cmake, its version file,
#                                        the exported targets, CoalesceAot.cmake
#
# The headers keep the source tree's layout, so a program includes
# "runtime/Coalesce.h" whether it uses the installed package or the tree.
# LLVM is linked privately into the shared library: a consumer needs neither
# LLVM's CMake package nor its headers, only its shared library at run time
# (found through libcoalesce's RUNPATH).

include(CMakePackageConfigHelpers)

set(COALESCE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/Coalesce")

install(TARGETS coalesce coalesce-aot coalesce-cache
  EXPORT CoalesceTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

foreach(layer dsl scheduler codegen runtime)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/coalesce/${layer}
    FILES_MATCHING PATTERN "*.h"
    PATTERN "aot" EXCLUDE)
endforeach()

# What a user's generator includes (coalesce_add_generator): the tool that
# loads it holds the rest.
install(FILES ${PROJECT_SOURCE_DIR}/runtime/aot/Generator.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/coalesce/runtime/aot)

install(EXPORT CoalesceTargets
  NAMESPACE Coalesce::
  DESTINATION ${COALESCE_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/CoalesceConfig.cmake.in
  ${PROJECT_BINARY_DIR}/CoalesceConfig.cmake
  INSTALL_DESTINATION ${COALESCE_INSTALL_CMAKEDIR})
# 0.x: a minor version may change the API, so only the same minor matches.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/CoalesceConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)

install(FILES
  ${PROJECT_BINARY_DIR}/CoalesceConfig.cmake
  ${PROJECT_BINARY_DIR}/CoalesceConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/CoalesceAot.cmake
  DESTINATION ${COALESCE_INSTALL_CMAKEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/coalesce)
