/*
 * The primitive costs of this machine that a lock-based OpenMP server pays (simsrv testbed
 * --primitives; MIT, part of simsrv).  Prints one JSON object: medians, in nanoseconds,
 * over many repetitions of
 *
 *   lock_uncontended_ns       omp_set_lock + omp_unset_lock by one thread, nobody else
 *   nest_lock_uncontended_ns  the same with omp_set_nest_lock / omp_unset_nest_lock
 *   cache_line_transfer_ns    one core reading a line the other core just wrote (half a
 *                             ping-pong round trip between two threads pinned to CPUs A, B)
 *   lock_handoff_ns.HOLD      release-to-acquire time of a contended omp lock: a thread holds
 *                             it HOLD us while the other waits in omp_set_lock; from the
 *                             holder's unset to the waiter's return
 *   fork_wake_ns.GAP          a parallel region's start to the second thread's entry, the
 *                             team idle GAP us before (a frame period: the team sleeps)
 *   task_ns.T                 making and running one empty task from one producer (omp
 *                             single) with T threads, per task
 *   barrier_ns                one barrier of two threads
 *
 * The OpenMP runtime's wait policy (OMP_WAIT_POLICY) is whatever the environment says; the
 * caller runs this once per policy.  argv[1], argv[2]: the two CPUs (default 0 and 1).
 */
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void spin_ns(double ns)
{
	double end = now_ns() + ns;
	while (now_ns() < end)
		;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(double), cmp);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

#define REPS 15

static double lock_uncontended(int nested)
{
	double per[REPS];
	omp_lock_t lock;
	omp_nest_lock_t nest;
	int r, i, n = 200000;
	omp_init_lock(&lock);
	omp_init_nest_lock(&nest);
	for (r = 0; r < REPS; r++) {
		double t0 = now_ns();
		for (i = 0; i < n; i++) {
			if (nested) {
				omp_set_nest_lock(&nest);
				omp_unset_nest_lock(&nest);
			} else {
				omp_set_lock(&lock);
				omp_unset_lock(&lock);
			}
		}
		per[r] = (now_ns() - t0) / n;
	}
	return median(per, REPS);
}

static volatile int pingpong __attribute__((aligned(64)));

static double cache_line_transfer(int cpu_a, int cpu_b)
{
	double per[REPS];
	int r;
	for (r = 0; r < REPS; r++) {
		int n = 20000;
		double t0 = 0, t1 = 0;
		pingpong = 0;
#pragma omp parallel num_threads(2)
		{
			int me = omp_get_thread_num(), k;
			pin(me == 0 ? cpu_a : cpu_b);
#pragma omp barrier
			if (me == 0)
				t0 = now_ns();
			for (k = 0; k < n; k++) {
				while (pingpong != 2 * k + me)
					;
				pingpong = 2 * k + me + 1;
			}
#pragma omp barrier
			if (me == 0)
				t1 = now_ns();
		}
		per[r] = (t1 - t0) / (2.0 * n);
	}
	return median(per, REPS);
}

#define HANDOFFS 60

static double lock_handoff(double hold_us)
{
	double gap[HANDOFFS];
	omp_lock_t lock;
	volatile double released = 0;
	volatile int turn = 0;
	omp_init_lock(&lock);
#pragma omp parallel num_threads(2)
	{
		int me = omp_get_thread_num(), k;
		for (k = 0; k < HANDOFFS; k++) {
			if (me == 0) {
				omp_set_lock(&lock);
				turn = 1; /* the other thread may now try */
				spin_ns(hold_us * 1e3);
				released = now_ns();
				omp_unset_lock(&lock);
			} else {
				while (turn != 1)
					;
				omp_set_lock(&lock);
				gap[k] = now_ns() - released;
				omp_unset_lock(&lock);
				turn = 0;
			}
#pragma omp barrier
		}
	}
	omp_destroy_lock(&lock);
	return median(gap, HANDOFFS);
}

#define WAKES 40

static double fork_wake(double gap_us)
{
	double lag[WAKES];
	int k;
	for (k = 0; k < WAKES; k++) {
		double t0;
		struct timespec ts = {0, (long)(gap_us * 1e3)};
		if (gap_us > 0)
			nanosleep(&ts, NULL);
		t0 = now_ns();
#pragma omp parallel num_threads(2)
		{
			if (omp_get_thread_num() == 1)
				lag[k] = now_ns() - t0;
		}
	}
	return median(lag, WAKES);
}

static volatile int sink;

static double task_cost(int threads)
{
	double per[REPS];
	int r, n = 20000;
	for (r = 0; r < REPS; r++) {
		double t0 = now_ns();
#pragma omp parallel num_threads(threads)
		{
#pragma omp single
			{
				int k;
				for (k = 0; k < n; k++) {
#pragma omp task firstprivate(k)
					sink = k;
				}
			}
		}
		per[r] = (now_ns() - t0) / n;
	}
	return median(per, REPS);
}

static double barrier_cost(void)
{
	double per[REPS];
	int r, n = 20000;
	for (r = 0; r < REPS; r++) {
		double t0 = now_ns();
#pragma omp parallel num_threads(2)
		{
			int k;
			for (k = 0; k < n; k++) {
#pragma omp barrier
			}
		}
		per[r] = (now_ns() - t0) / n;
	}
	return median(per, REPS);
}

int main(int argc, char **argv)
{
	int cpu_a = argc > 1 ? atoi(argv[1]) : 0, cpu_b = argc > 2 ? atoi(argv[2]) : 1;
	const char *policy = getenv("OMP_WAIT_POLICY");
	double holds[] = {1, 5, 50, 1000}, gaps[] = {0, 1000, 20000, 100000};
	int i;
	omp_set_dynamic(0);
	printf("{\"omp_wait_policy\": \"%s\", \"cpus\": [%d, %d],\n", policy ? policy : "", cpu_a,
	       cpu_b);
	printf(" \"lock_uncontended_ns\": %.2f,\n", lock_uncontended(0));
	printf(" \"nest_lock_uncontended_ns\": %.2f,\n", lock_uncontended(1));
	printf(" \"cache_line_transfer_ns\": %.2f,\n", cache_line_transfer(cpu_a, cpu_b));
	for (i = 0; i < 4; i++)
		printf(" \"lock_handoff_ns.%g\": %.1f,\n", holds[i], lock_handoff(holds[i]));
	for (i = 0; i < 4; i++)
		printf(" \"fork_wake_ns.%g\": %.1f,\n", gaps[i], fork_wake(gaps[i]));
	printf(" \"task_ns.1\": %.2f,\n", task_cost(1));
	printf(" \"task_ns.2\": %.2f,\n", task_cost(2));
	printf(" \"barrier_ns\": %.2f}\n", barrier_cost());
	return 0;
}
