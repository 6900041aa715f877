/* A closed-loop parameter server under SimGrid's SMPI, timed on SMPI's simulated clock.
 *
 * Usage: ps_bench MODE REPLY ITERS BYTES COMPUTE_S UPDATE_S JITTER
 *
 * Rank 0 is the server, ranks 1..N the workers.  Each worker, ITERS times: "computes" for
 * COMPUTE_S x (1 + JITTER x (2 u - 1)) seconds, u in [0, 1) a hash of (worker, iteration)
 * (compute_factor below; sg_ps.py computes the same numbers for clustersim), sends a push of BYTES to rank 0 (MPI_Send), receives a reply of BYTES
 * from rank 0 (MPI_Recv).  The server serves N x ITERS pushes: takes one, "computes" an update
 * of UPDATE_S seconds, answers that worker with BYTES.
 *
 * MODE says how the server takes its pushes:
 *   prepost    an MPI_Irecv is posted for every worker at all times (re-posted once served),
 *              so a push's transfer starts as soon as the worker sends it - every push in
 *              flight shares the server's link (what clustersim assumes: a Send travels
 *              whether or not the receiver waits for it).  Completed pushes are served in the
 *              order they completed (MPI_Testsome after each one served, appended to a FIFO;
 *              pushes completing within one update are appended in rank order).
 *   anysource  a blocking MPI_Recv(MPI_ANY_SOURCE) per push: with rendezvous sends a push's
 *              transfer starts only when that receive matches it, so the server takes in one
 *              push at a time, in the order the workers posted their sends.
 * REPLY: isend (MPI_Isend, the server goes on at once; it waits for its previous reply to a
 * worker before answering that worker again - clustersim's async_sgd shard) or send
 * (blocking MPI_Send: the server sits through each reply).
 *
 * "Compute" is sg_actor_sleep_for: simulated time with nothing else to it (smpi_execute of
 * the same duration on a host of smpi/host-speed flops would take the same time; sleeping
 * does not depend on the host speed or smpi/cpu-threshold).
 *
 * Every rank starts at one agreed instant (coll_bench.c's alignment: the latest clock plus
 * 1 ms).  Rank 0 prints, per worker, the start time of each iteration and its end time
 * relative to that instant: "TIMES rank t_0 ... t_{ITERS-1} t_end"; then "SERVER updates
 * t_last" (updates served, when the last reply was posted).
 */
#include <mpi.h>
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_PUSH 11
#define TAG_PULL 12

/* Worker w's compute time factor at iteration k: splitmix64 of (w, k) -> u in [0, 1).  The
 * same integer arithmetic in sg_ps.compute_factor gives clustersim the same doubles. */
static double compute_factor(int w, int k, double jitter)
{
  if (jitter == 0.0)
    return 1.0;
  uint64_t h = (uint64_t)w * 0x9E3779B97F4A7C15ULL + (uint64_t)k * 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 31;
  h *= 0x94D049BB133111EBULL;
  h ^= h >> 29;
  double u = (double)(h >> 11) * 0x1.0p-53;
  return 1.0 + jitter * (2.0 * u - 1.0);
}

static void serve(int p, int prepost, int isend, int iters, char *buf, long bytes,
                  double update_s, double *t_last)
{
  int workers = p - 1;
  long total = (long)workers * iters;
  MPI_Request *in = malloc(sizeof(MPI_Request) * workers);
  MPI_Request *out = malloc(sizeof(MPI_Request) * workers);
  int *left = malloc(sizeof(int) * workers);      /* pushes still to post a receive for */
  int *fifo = malloc(sizeof(int) * (workers + 1)); /* completed, not yet served */
  int *idx = malloc(sizeof(int) * workers);
  int head = 0, tail = 0, queued = 0;
  for (int w = 0; w < workers; w++) {
    out[w] = MPI_REQUEST_NULL;
    in[w] = MPI_REQUEST_NULL;
    left[w] = iters;
    if (prepost) {
      MPI_Irecv(buf, (int)bytes, MPI_BYTE, w + 1, TAG_PUSH, MPI_COMM_WORLD, &in[w]);
      left[w]--;
    }
  }
  for (long k = 0; k < total; k++) {
    int w;
    if (prepost) {
      if (queued == 0) { /* nothing completed yet: wait for the first */
        int i;
        MPI_Waitany(workers, in, &i, MPI_STATUS_IGNORE);
        fifo[tail] = i;
        tail = (tail + 1) % (workers + 1);
        queued++;
      }
      w = fifo[head];
      head = (head + 1) % (workers + 1);
      queued--;
      if (left[w] > 0) { /* re-post at once: the worker's next push may travel meanwhile */
        MPI_Irecv(buf, (int)bytes, MPI_BYTE, w + 1, TAG_PUSH, MPI_COMM_WORLD, &in[w]);
        left[w]--;
      }
    } else {
      MPI_Status st;
      MPI_Recv(buf, (int)bytes, MPI_BYTE, MPI_ANY_SOURCE, TAG_PUSH, MPI_COMM_WORLD, &st);
      w = st.MPI_SOURCE - 1;
    }
    if (update_s > 0)
      sg_actor_sleep_for(update_s);
    if (prepost) { /* pushes that completed during the update, in rank order */
      int n = 0;
      MPI_Testsome(workers, in, &n, idx, MPI_STATUSES_IGNORE);
      for (int j = 0; n != MPI_UNDEFINED && j < n; j++) {
        fifo[tail] = idx[j];
        tail = (tail + 1) % (workers + 1);
        queued++;
      }
    }
    if (isend) {
      if (out[w] != MPI_REQUEST_NULL)
        MPI_Wait(&out[w], MPI_STATUS_IGNORE);
      MPI_Isend(buf, (int)bytes, MPI_BYTE, w + 1, TAG_PULL, MPI_COMM_WORLD, &out[w]);
    } else {
      MPI_Send(buf, (int)bytes, MPI_BYTE, w + 1, TAG_PULL, MPI_COMM_WORLD);
    }
  }
  *t_last = simgrid_get_clock();
  MPI_Waitall(workers, out, MPI_STATUSES_IGNORE);
  free(in);
  free(out);
  free(left);
  free(fifo);
  free(idx);
}

int main(int argc, char **argv)
{
  int rank, p;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (argc != 8 || p < 2) {
    if (rank == 0)
      fprintf(stderr, "usage: %s prepost|anysource isend|send ITERS BYTES COMPUTE_S UPDATE_S"
                      " JITTER (2 ranks or more)\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  int prepost = strcmp(argv[1], "prepost") == 0;
  int isend = strcmp(argv[2], "isend") == 0;
  int iters = atoi(argv[3]);
  long bytes = atol(argv[4]);
  double compute_s = atof(argv[5]), update_s = atof(argv[6]), jitter = atof(argv[7]);
  if ((!prepost && strcmp(argv[1], "anysource") != 0) || (!isend && strcmp(argv[2], "send") != 0)
      || iters < 1 || bytes < 1 || bytes > 2147483647L || jitter < 0 || jitter >= 1) {
    if (rank == 0)
      fprintf(stderr, "bad arguments\n");
    MPI_Finalize();
    return 2;
  }
  /* Shared buffers: SMPI skips copying their content (124 workers x 2 x BYTES otherwise). */
  char *buf = SMPI_SHARED_MALLOC((size_t)bytes);
  double *times = malloc(sizeof(double) * (iters + 1));
  double *all = rank == 0 ? malloc(sizeof(double) * (iters + 1) * p) : NULL;

  MPI_Barrier(MPI_COMM_WORLD);
  double now = simgrid_get_clock(), latest;
  MPI_Allreduce(&now, &latest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  double start = latest + 1e-3;
  sg_actor_sleep_until(start);

  double t_last = 0.0;
  if (rank == 0) {
    serve(p, prepost, isend, iters, buf, bytes, update_s, &t_last);
    for (int k = 0; k <= iters; k++)
      times[k] = 0.0;
  } else {
    for (int k = 0; k < iters; k++) {
      times[k] = simgrid_get_clock() - start;
      if (compute_s > 0)
        sg_actor_sleep_for(compute_s * compute_factor(rank, k, jitter));
      MPI_Send(buf, (int)bytes, MPI_BYTE, 0, TAG_PUSH, MPI_COMM_WORLD);
      MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, TAG_PULL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    times[iters] = simgrid_get_clock() - start;
  }
  MPI_Gather(times, iters + 1, MPI_DOUBLE, all, iters + 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    for (int r = 1; r < p; r++) {
      printf("TIMES %d", r);
      for (int k = 0; k <= iters; k++)
        printf(" %.12e", all[(long)r * (iters + 1) + k]);
      printf("\n");
    }
    printf("SERVER %ld %.12e\n", (long)(p - 1) * iters, t_last - start);
    fflush(stdout);
    free(all);
  }
  free(times);
  SMPI_SHARED_FREE(buf);
  MPI_Finalize();
  return 0;
}
