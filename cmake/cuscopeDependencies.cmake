# The packages cuscope needs: CUDA 13 (cudart, CUPTI, NVTX3) and Debian's Abseil, spdlog, fmt.
# Shared by the build and by cuscopeConfig.cmake (through find_dependency there).
find_package(CUDAToolkit 12 REQUIRED)
find_package(absl REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(Threads REQUIRED)
