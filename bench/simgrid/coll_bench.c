/* Times one MPI collective under SimGrid's SMPI, on SMPI's simulated clock.
 *
 * Usage: coll_bench OP REPS SIZE...   (OP: p2p | allreduce | reduce | bcast | allgather | alltoall)
 * p2p: rank 0 sends SIZE bytes to rank 1 (the latency/bandwidth check of the mapping).
 * SIZE follows clustersim's convention (docs/collectives.md): the per-rank buffer for
 * allreduce and bcast, the whole gathered buffer for allgather (block SIZE/p), the per-rank
 * send buffer for alltoall (SIZE/p to each peer).  Elements are 4-byte floats.
 *
 * Why not a plain "barrier; t0 = MPI_Wtime(); op; t1" loop: ranks leave a barrier at
 * different simulated instants (a few link latencies apart), which is as large as a small
 * collective.  Instead every rank agrees on one start instant (the latest clock of any rank,
 * found with an allreduce, plus 1 ms) and sleeps until exactly then on the simulated clock,
 * so all ranks enter the collective together - clustersim's assumption.  The time reported
 * is (latest end over ranks) - start.  Each repetition is barrier-separated; rank 0 prints
 * one line per size: "RESULT op size_B ranks min_s max_s" (min and max over repetitions).
 */
#include <mpi.h>
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void run_op(const char *op, float *sbuf, float *rbuf, long count, int p)
{
  if (strcmp(op, "p2p") == 0) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
      MPI_Send(sbuf, (int)count, MPI_FLOAT, 1, 0, MPI_COMM_WORLD);
    else if (rank == 1)
      MPI_Recv(rbuf, (int)count, MPI_FLOAT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (strcmp(op, "allreduce") == 0)
    MPI_Allreduce(sbuf, rbuf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  else if (strcmp(op, "reduce") == 0)
    MPI_Reduce(sbuf, rbuf, (int)count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
  else if (strcmp(op, "bcast") == 0)
    MPI_Bcast(sbuf, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD);
  else if (strcmp(op, "allgather") == 0)
    MPI_Allgather(sbuf, (int)(count / p), MPI_FLOAT, rbuf, (int)(count / p), MPI_FLOAT,
                  MPI_COMM_WORLD);
  else if (strcmp(op, "alltoall") == 0)
    MPI_Alltoall(sbuf, (int)(count / p), MPI_FLOAT, rbuf, (int)(count / p), MPI_FLOAT,
                 MPI_COMM_WORLD);
  else
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* Elements in the per-rank buffer for SIZE bytes; 0 when the op cannot carry that size. */
static long elements(const char *op, long size, int p)
{
  long count = size / 4;
  int blocked = strcmp(op, "allgather") == 0 || strcmp(op, "alltoall") == 0;
  if (count < 1 || (blocked && count % p != 0))
    return 0;
  return count;
}

int main(int argc, char **argv)
{
  int rank, p;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (argc < 4) {
    if (rank == 0)
      fprintf(stderr, "usage: %s OP REPS SIZE...\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  const char *op = argv[1];
  int reps = atoi(argv[2]);
  for (int a = 3; a < argc; a++) {
    long size = atol(argv[a]);
    long count = elements(op, size, p);
    if (count == 0) {
      if (rank == 0)
        printf("SKIP %s %ld %d\n", op, size, p);
      continue;
    }
    /* Shared buffers: SMPI skips copying their content, so 64 MiB x 64 ranks fits. */
    float *sbuf = SMPI_SHARED_MALLOC((size_t)count * 4);
    float *rbuf = SMPI_SHARED_MALLOC((size_t)count * 4);
    double tmin = 1e300, tmax = 0.0;
    for (int r = 0; r < reps; r++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double now = simgrid_get_clock(), latest, end, last_end;
      MPI_Allreduce(&now, &latest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      double start = latest + 1e-3;
      sg_actor_sleep_until(start);
      run_op(op, sbuf, rbuf, count, p);
      end = simgrid_get_clock();
      MPI_Reduce(&end, &last_end, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        double t = last_end - start;
        tmin = t < tmin ? t : tmin;
        tmax = t > tmax ? t : tmax;
      }
    }
    if (rank == 0)
      printf("RESULT %s %ld %d %.12e %.12e\n", op, count * 4, p, tmin, tmax);
    fflush(stdout);
    SMPI_SHARED_FREE(sbuf);
    SMPI_SHARED_FREE(rbuf);
  }
  MPI_Finalize();
  return 0;
}
