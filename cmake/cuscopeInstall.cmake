# Install rules: headers, the library, exported targets (cuscope::cuscope) and a package config.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS cuscope EXPORT cuscopeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/cuscope DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Zero-code mode's injection library: loaded by path (cuscope run), not linked, so not exported.
# It needs the CUDA runtime and CUPTI of the toolkit it was built with, wherever it is installed.
set_target_properties(cuscope_inject PROPERTIES INSTALL_RPATH "${CUDAToolkit_LIBRARY_DIR}")
install(TARGETS cuscope_inject LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(TARGET cuscope_cli)
  install(TARGETS cuscope_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})  # bin/cuscope
endif()

set(cuscope_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/cuscope)
install(EXPORT cuscopeTargets NAMESPACE cuscope:: DESTINATION ${cuscope_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/cuscopeConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cuscopeConfig.cmake
                              INSTALL_DESTINATION ${cuscope_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cuscopeConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cuscopeConfig.cmake ${PROJECT_BINARY_DIR}/cuscopeConfigVersion.cmake
        DESTINATION ${cuscope_cmake_dir})
