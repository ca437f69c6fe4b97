/*
 * test/t/flip_switch.c — flips the kill switch (or a type pause) for TAP
 * 122, timing each change on the client side with the same clock the
 * sink's kernel receive times use (CLOCK_REALTIME).
 *
 *   flip_switch CONNINFO N OFF_MS ON_MS OFF_SQL ON_SQL
 *
 * For each of N rounds: run OFF_SQL (autocommit), hold OFF_MS, run ON_SQL,
 * hold ON_MS. Prints one line per round:
 *   i off_sent off_done on_sent on_done
 * off_sent is taken right before OFF_SQL is sent, off_done right after its
 * result (so its COMMIT) came back: the commit happened between the two.
 * Exits non-zero on any error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

static double
Now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
Run(PGconn *conn, const char *sql)
{
	PGresult   *res = PQexec(conn, sql);

	if (PQresultStatus(res) != PGRES_TUPLES_OK && PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		fprintf(stderr, "flip_switch: %s: %s", sql, PQerrorMessage(conn));
		exit(1);
	}
	PQclear(res);
}

int
main(int argc, char **argv)
{
	PGconn	   *conn;
	int			n;
	int			off_ms;
	int			on_ms;

	if (argc != 7)
	{
		fprintf(stderr, "usage: flip_switch CONNINFO N OFF_MS ON_MS OFF_SQL ON_SQL\n");
		return 2;
	}
	n = atoi(argv[2]);
	off_ms = atoi(argv[3]);
	on_ms = atoi(argv[4]);
	conn = PQconnectdb(argv[1]);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		fprintf(stderr, "flip_switch: %s", PQerrorMessage(conn));
		return 1;
	}
	for (int i = 1; i <= n; i++)
	{
		double		off_sent,
					off_done,
					on_sent,
					on_done;

		off_sent = Now();
		Run(conn, argv[5]);
		off_done = Now();
		usleep((useconds_t) off_ms * 1000);
		on_sent = Now();
		Run(conn, argv[6]);
		on_done = Now();
		printf("%d %.6f %.6f %.6f %.6f\n", i, off_sent, off_done, on_sent, on_done);
		fflush(stdout);
		usleep((useconds_t) on_ms * 1000);
	}
	PQfinish(conn);
	return 0;
}
