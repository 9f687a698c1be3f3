// One rank of a job for the merge test (tests/cli/check_merge.py), started by mpirun: it needs no
// MPI library, the rank comes from OMPI_COMM_WORLD_RANK (the variable cuscope reads too). Rank r
// runs 3 steps of "step" > "compute" and 3*r entries of "step/extra"; rank 3's first compute
// sleeps 800 ms more, so rank 3 is the slowest of "step" and "step/compute" by construction.
#include <chrono>
#include <cstdlib>
#include <cuscope/cuscope.hpp>
#include <thread>

int main() {
  const char* env = std::getenv("OMPI_COMM_WORLD_RANK");
  const int rank = env != nullptr ? std::atoi(env) : 0;
  for (int step = 0; step < 3; ++step) {
    CUSCOPE_SCOPE("step");
    {
      CUSCOPE_SCOPE("compute");
      std::this_thread::sleep_for(std::chrono::milliseconds(rank == 3 && step == 0 ? 802 : 2));
    }
    for (int i = 0; i < rank; ++i) {
      CUSCOPE_SCOPE("extra");
    }
    cuscope::step();
  }
  return 0;
}
