# `cmake --install`: the static library, the public headers, parasurfConfig.cmake (find_package(parasurf) gives
# parasurf::parasurf) and parasurf.pc for pkg-config.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS parasurf EXPORT parasurfTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/parasurf DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(_parasurf_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/parasurf)
install(EXPORT parasurfTargets NAMESPACE parasurf:: DESTINATION ${_parasurf_cmake_dir})
set(PARASURF_CONFIG_CUDA ${PARASURF_ENABLE_CUDA})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/parasurfConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/parasurfConfig.cmake INSTALL_DESTINATION ${_parasurf_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/parasurfConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/parasurfConfig.cmake ${PROJECT_BINARY_DIR}/parasurfConfigVersion.cmake
        DESTINATION ${_parasurf_cmake_dir})

# pkg-config: a static library, so what it links is listed with it.
set(PARASURF_PC_PRIVATE "-lz -lgomp -lpthread")
if(PARASURF_HAVE_GDCM)
  string(APPEND PARASURF_PC_PRIVATE " -lgdcmMSFF -lgdcmIOD -lgdcmDSED -lgdcmDICT -lgdcmCommon")
endif()
if(PARASURF_ENABLE_CUDA)
  set(PARASURF_PC_PRIVATE "${PARASURF_PC_PRIVATE} -L${CUDAToolkit_LIBRARY_DIR} -lcudart")
endif()
file(RELATIVE_PATH PARASURF_PC_TO_PREFIX "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" PARASURF_PC_TO_PREFIX "${PARASURF_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/parasurf.pc.in ${PROJECT_BINARY_DIR}/parasurf.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/parasurf.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
