// cudaMemcpy2D for the simulated GPU (tests/gpu/gpusim.sh preloads it; tests/gpu/README.md, "On
// a simulated GPU"). GPGPU-Sim's own cudaMemcpy2D copies only when the source and destination
// pitches are equal and aborts the program otherwise ("different src and dst pitch not
// supported yet"); the tensor-core rungs' zero padding (cuda/gemm/pad.cuh) copies an (M, K)
// matrix into a wider (Mp, Kp) buffer, so their pitches differ. This one does what CUDA's
// does, a row at a time: `height` rows of `width` bytes, from src every `spitch` bytes to dst
// every `dpitch` bytes, through the simulator's cudaMemcpy.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdlib>

// Preloaded into the test program only: the programs the simulator starts (ptxas, its PTX
// stand-in) do not get it.
__attribute__((constructor)) static void keep_out_of_child_processes() { unsetenv("LD_PRELOAD"); }

extern "C" cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                    size_t height, cudaMemcpyKind kind) {
  if (width > dpitch || width > spitch) return cudaErrorInvalidPitchValue;
  for (size_t row = 0; row < height; ++row) {
    const cudaError_t rc = cudaMemcpy(static_cast<char*>(dst) + row * dpitch,
                                      static_cast<const char*>(src) + row * spitch, width, kind);
    if (rc != cudaSuccess) return rc;
  }
  return cudaSuccess;
}
