# Included by CMake after each project() call of llama-cpp-python's build (CMAKE_PROJECT_INCLUDE,
# set by scripts/setup.sh): builds only what the embedded judge loads, libllama and libggml.
#
# llama-cpp-python forces LLAMA_BUILD_COMMON ON in its cache, for the multimodal library (mtmd),
# which the judge never loads (setup.sh also passes LLAVA_BUILD=OFF). A normal variable of the
# same name shadows that cache entry (policies CMP0126 and CMP0077, NEW under the
# cmake_minimum_required of both projects), so llama.cpp's common library, its HTTP client and
# their install rules are left out. The compile time this saves: docs/benchmarks.md, "Set-up".
set(LLAMA_BUILD_COMMON OFF)
