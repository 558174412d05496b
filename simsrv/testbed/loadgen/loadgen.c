/*
 * simsrv testbed load generator: synthetic QuakeWorld clients in one compiled loop.
 *
 * Part of simsrv (MIT licence, see LICENSE).  This is our own code: it speaks the
 * QuakeWorld protocol as simsrv/testbed/protocol.py describes it and reproduces the loop of
 * simsrv/testbed/clients.py (_drive, _Client, Bot), which is its specification.  No server
 * source is copied here: the move checksum's 1,024-byte table lives in the server's GPL
 * source (src/common.c) and is read at run time by simsrv, which hands it to this program
 * in a file (--table).
 *
 * Usage (simsrv/testbed/loadgen.py runs it):
 *   loadgen --plan FILE --table FILE --out DIR
 *   loadgen --selftest --table FILE     (moves from stdin, their encoded bytes in hex)
 *
 * The plan is a text file of "key value" lines (port, clients, rate_hz, msec, warmup_s,
 * duration_s, signon_timeout_s, origin_every, seed, idle, action_at, cycle, action_jump,
 * action_shot, spin_s, resend_s) followed by one line per client: "client PHASE_S FIRST_TICK".
 * The output directory receives meta.txt and the binary logs clients.bin, moves.bin,
 * replies.bin, origins.bin, sends.bin (little-endian records, see write_outputs()).
 * Exit status: 0 done, 2 bad arguments, 3 the clients did not sign on (one line on stderr),
 * 4 a system call failed, 128 + signal when stopped by SIGTERM or SIGINT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROTOCOL_VERSION 28
#define CLC_NOP 1
#define CLC_MOVE 3
#define CLC_STRINGCMD 4
#define CM_ANGLE1 1
#define CM_ANGLE3 2
#define CM_FORWARD 4
#define CM_SIDE 8
#define CM_UP 16
#define CM_BUTTONS 32
#define CM_IMPULSE 64
#define CM_ANGLE2 128
#define BUTTON_ATTACK 1
#define BUTTON_JUMP 2
#define WALK_SPEED 320
#define TABLE_SIZE 1024
#define SENT_RING 512
#define RELIABLE_MAX 1024
#define PENDING_MAX 8192
#define MAX_ORIGINS 256
#define MAX_STUFF 64

/* ------------------------------------------------------------------------------------------ */
/* clocks and small helpers */

static double monotonic(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double process_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("loadgen: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(code);
}

typedef struct {
	char *data;
	size_t len, cap, item;
} vec_t;

static void *vec_push(vec_t *v)
{
	if (v->len == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 4096;
		v->data = realloc(v->data, v->cap * v->item);
		if (!v->data)
			die(4, "out of memory");
	}
	return v->data + v->item * v->len++;
}

/* ------------------------------------------------------------------------------------------ */
/* the checksum: CRC-16/CCITT (0x1021, start 0xffff) over the move and 4 sequence bytes */

static uint16_t crc_table[256];
static uint8_t chktbl[TABLE_SIZE];

static void crc_init(void)
{
	for (int byte = 0; byte < 256; byte++) {
		unsigned crc = (unsigned)byte << 8;
		for (int i = 0; i < 8; i++)
			crc = (crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1;
		crc_table[byte] = crc & 0xffff;
	}
}

static uint16_t crc16(const uint8_t *data, size_t n)
{
	unsigned crc = 0xffff;
	for (size_t i = 0; i < n; i++)
		crc = ((crc << 8) & 0xffff) ^ crc_table[(crc >> 8) ^ data[i]];
	return crc;
}

static uint8_t sequence_checksum(const uint8_t *block, size_t n, uint32_t sequence)
{
	uint8_t chk[64];
	size_t p = sequence % (TABLE_SIZE - 4);
	if (n > 60)
		n = 60;
	memcpy(chk, block, n);
	chk[n] = (sequence & 0xff) ^ chktbl[p];
	chk[n + 1] = chktbl[p + 1];
	chk[n + 2] = ((sequence >> 8) & 0xff) ^ chktbl[p + 2];
	chk[n + 3] = chktbl[p + 3];
	return crc16(chk, n + 4) & 0xff;
}

/* ------------------------------------------------------------------------------------------ */
/* user commands and clc_move */

typedef struct {
	int msec;
	uint16_t angles[3]; /* 16-bit angles as written on the wire */
	int forward, side, up;
	int buttons, impulse;
} usercmd_t;

static uint16_t angle16(double degrees)
{
	/* protocol.py: int(degrees * 65536 / 360) & 0xFFFF (int() truncates toward zero) */
	return (uint16_t)((int64_t)(degrees * 65536 / 360) & 0xffff);
}

static size_t put_short(uint8_t *out, int value)
{
	out[0] = value & 0xff;
	out[1] = (value >> 8) & 0xff;
	return 2;
}

static size_t write_delta_usercmd(uint8_t *out, const usercmd_t *old, const usercmd_t *new)
{
	int bits = 0;
	size_t n = 1;
	if (new->angles[0] != old->angles[0])
		bits |= CM_ANGLE1;
	if (new->angles[1] != old->angles[1])
		bits |= CM_ANGLE2;
	if (new->angles[2] != old->angles[2])
		bits |= CM_ANGLE3;
	if (new->forward != old->forward)
		bits |= CM_FORWARD;
	if (new->side != old->side)
		bits |= CM_SIDE;
	if (new->up != old->up)
		bits |= CM_UP;
	if (new->buttons != old->buttons)
		bits |= CM_BUTTONS;
	if (new->impulse != old->impulse)
		bits |= CM_IMPULSE;
	out[0] = bits;
	if (bits & CM_ANGLE1)
		n += put_short(out + n, new->angles[0]);
	if (bits & CM_ANGLE2)
		n += put_short(out + n, new->angles[1]);
	if (bits & CM_ANGLE3)
		n += put_short(out + n, new->angles[2]);
	if (bits & CM_FORWARD)
		n += put_short(out + n, new->forward);
	if (bits & CM_SIDE)
		n += put_short(out + n, new->side);
	if (bits & CM_UP)
		n += put_short(out + n, new->up);
	if (bits & CM_BUTTONS)
		out[n++] = new->buttons & 0xff;
	if (bits & CM_IMPULSE)
		out[n++] = new->impulse & 0xff;
	out[n++] = new->msec < 0 ? 0 : new->msec > 255 ? 255 : new->msec;
	return n;
}

static const usercmd_t null_cmd;

/* protocol.move_message: clc_move, checksum, loss, then oldest, previous, newest */
static size_t move_message(uint8_t *out, uint32_t sequence, const usercmd_t cmds[3])
{
	size_t n = 2;
	out[n++] = 0; /* packet loss percent */
	n += write_delta_usercmd(out + n, &null_cmd, &cmds[0]);
	n += write_delta_usercmd(out + n, &cmds[0], &cmds[1]);
	n += write_delta_usercmd(out + n, &cmds[1], &cmds[2]);
	out[0] = CLC_MOVE;
	out[1] = sequence_checksum(out + 2, n - 2, sequence);
	return n;
}

/* ------------------------------------------------------------------------------------------ */
/* each client's random generator: splitmix64-seeded xoshiro256** */

typedef struct {
	uint64_t s[4];
} rng_t;

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void rng_seed(rng_t *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed * 0x100000001b3ULL ^ (stream + 1) * 0xd1342543de82ef95ULL;
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng_t *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

static double rng_uniform(rng_t *r, double lo, double hi)
{
	return lo + (hi - lo) * ((rng_next(r) >> 11) * 0x1.0p-53);
}

static int rng_integer(rng_t *r, int n) /* uniform in [0, n) without bias */
{
	uint64_t limit = UINT64_MAX - UINT64_MAX % (uint64_t)n, x;
	do
		x = rng_next(r);
	while (x >= limit);
	return (int)(x % (uint64_t)n);
}

/* ------------------------------------------------------------------------------------------ */
/* the plan */

typedef struct {
	int port, clients, msec, origin_every, idle, action_at, cycle, action_jump, action_shot;
	long rate_bytes;
	double rate_hz, warmup_s, duration_s, signon_timeout_s, spin_s, resend_s, spacing_s;
	uint64_t seed;
	double *phase_s;
	long *first_tick;
} plan_t;

static plan_t plan;

/* ------------------------------------------------------------------------------------------ */
/* the netchan (protocol.Netchan) */

typedef struct {
	uint16_t qport;
	uint32_t outgoing_sequence, incoming_sequence, incoming_acknowledged;
	int incoming_reliable_acknowledged, incoming_reliable_sequence;
	int reliable_sequence;
	uint32_t last_reliable_sequence;
	uint8_t reliable[RELIABLE_MAX];
	size_t reliable_len;
	uint8_t pending[PENDING_MAX];
	size_t pending_len;
} netchan_t;

static void put_long(uint8_t *out, uint32_t v)
{
	out[0] = v & 0xff;
	out[1] = (v >> 8) & 0xff;
	out[2] = (v >> 16) & 0xff;
	out[3] = (v >> 24) & 0xff;
}

static uint32_t get_long(const uint8_t *in)
{
	return in[0] | (uint32_t)in[1] << 8 | (uint32_t)in[2] << 16 | (uint32_t)in[3] << 24;
}

static void queue_reliable(netchan_t *c, const uint8_t *data, size_t n)
{
	if (c->pending_len + n > PENDING_MAX)
		die(4, "a client's reliable queue overflowed (%zu bytes)", c->pending_len + n);
	memcpy(c->pending + c->pending_len, data, n);
	c->pending_len += n;
}

/* the next packet (written to out) and its sequence */
static size_t transmit(netchan_t *c, uint8_t *out, const uint8_t *unreliable, size_t n,
                       uint32_t *sequence)
{
	int send_reliable = 0;
	size_t len = 10;
	if (c->incoming_acknowledged > c->last_reliable_sequence &&
	    c->incoming_reliable_acknowledged != c->reliable_sequence)
		send_reliable = 1; /* the last reliable was lost: resend it */
	if (!c->reliable_len && c->pending_len) {
		size_t take = c->pending_len < RELIABLE_MAX ? c->pending_len : RELIABLE_MAX;
		memcpy(c->reliable, c->pending, take);
		memmove(c->pending, c->pending + take, c->pending_len - take);
		c->pending_len -= take;
		c->reliable_len = take;
		c->reliable_sequence ^= 1;
		send_reliable = 1;
	}
	*sequence = c->outgoing_sequence;
	put_long(out, c->outgoing_sequence | (send_reliable ? 0x80000000u : 0));
	put_long(out + 4, c->incoming_sequence | ((uint32_t)c->incoming_reliable_sequence << 31));
	out[8] = c->qport & 0xff;
	out[9] = c->qport >> 8;
	c->outgoing_sequence++;
	if (send_reliable) {
		memcpy(out + len, c->reliable, c->reliable_len);
		len += c->reliable_len;
		c->last_reliable_sequence = c->outgoing_sequence;
	}
	memcpy(out + len, unreliable, n);
	return len + n;
}

/* the payload offset of a server packet, or 0 for a duplicate or out-of-order one */
static size_t process(netchan_t *c, const uint8_t *packet, size_t n)
{
	uint32_t w1, w2, sequence, sequence_ack;
	int reliable_message, reliable_ack;
	if (n < 8)
		return 0;
	w1 = get_long(packet);
	w2 = get_long(packet + 4);
	reliable_message = w1 >> 31;
	reliable_ack = w2 >> 31;
	sequence = w1 & 0x7fffffff;
	sequence_ack = w2 & 0x7fffffff;
	if (sequence <= c->incoming_sequence)
		return 0;
	if (reliable_ack == c->reliable_sequence)
		c->reliable_len = 0; /* the server has our last reliable message */
	c->incoming_sequence = sequence;
	c->incoming_acknowledged = sequence_ack;
	c->incoming_reliable_acknowledged = reliable_ack;
	if (reliable_message)
		c->incoming_reliable_sequence ^= 1;
	return 8;
}

/* ------------------------------------------------------------------------------------------ */
/* the server's messages (protocol.parse_server_message) */

enum {
	SVC_BAD = 0, SVC_NOP = 1, SVC_DISCONNECT = 2, SVC_UPDATESTAT = 3, SVC_SOUND = 6,
	SVC_PRINT = 8, SVC_STUFFTEXT = 9, SVC_SETANGLE = 10, SVC_SERVERDATA = 11,
	SVC_LIGHTSTYLE = 12, SVC_UPDATEFRAGS = 14, SVC_STOPSOUND = 16, SVC_PARTICLE = 18,
	SVC_DAMAGE = 19, SVC_SPAWNSTATIC = 20, SVC_SPAWNBASELINE = 22, SVC_TEMP_ENTITY = 23,
	SVC_SETPAUSE = 24, SVC_CENTERPRINT = 26, SVC_KILLEDMONSTER = 27, SVC_FOUNDSECRET = 28,
	SVC_SPAWNSTATICSOUND = 29, SVC_INTERMISSION = 30, SVC_FINALE = 31, SVC_CDTRACK = 32,
	SVC_SELLSCREEN = 33, SVC_SMALLKICK = 34, SVC_BIGKICK = 35, SVC_UPDATEPING = 36,
	SVC_UPDATEENTERTIME = 37, SVC_UPDATESTATLONG = 38, SVC_MUZZLEFLASH = 39,
	SVC_UPDATEUSERINFO = 40, SVC_DOWNLOAD = 41, SVC_PLAYERINFO = 42, SVC_NAILS = 43,
	SVC_CHOKECOUNT = 44, SVC_MODELLIST = 45, SVC_SOUNDLIST = 46, SVC_PACKETENTITIES = 47,
	SVC_DELTAPACKETENTITIES = 48, SVC_MAXSPEED = 49, SVC_ENTGRAVITY = 50, SVC_SETINFO = 51,
	SVC_SERVERINFO = 52, SVC_UPDATEPL = 53, SVC_NAILS2 = 54
};

/* bytes after the code of the fixed-size messages; -1 for the others, -2 for unknown codes */
static int svc_fixed[256];

static void svc_init(void)
{
	static const int fixed[][2] = {
		{SVC_NOP, 0}, {SVC_UPDATESTAT, 2}, {SVC_SETANGLE, 3}, {SVC_UPDATEFRAGS, 3},
		{SVC_STOPSOUND, 2}, {SVC_DAMAGE, 8}, {SVC_SETPAUSE, 1}, {SVC_KILLEDMONSTER, 0},
		{SVC_FOUNDSECRET, 0}, {SVC_SPAWNSTATICSOUND, 9}, {SVC_INTERMISSION, 9},
		{SVC_CDTRACK, 1}, {SVC_SELLSCREEN, 0}, {SVC_SMALLKICK, 0}, {SVC_BIGKICK, 0},
		{SVC_UPDATEPING, 3}, {SVC_UPDATEENTERTIME, 5}, {SVC_UPDATESTATLONG, 5},
		{SVC_MUZZLEFLASH, 2}, {SVC_CHOKECOUNT, 1}, {SVC_MAXSPEED, 4}, {SVC_ENTGRAVITY, 4},
		{SVC_UPDATEPL, 2}, {SVC_PARTICLE, 11},
	};
	static const int other[] = {
		SVC_BAD, SVC_DISCONNECT, SVC_SOUND, SVC_PRINT, SVC_STUFFTEXT, SVC_SERVERDATA,
		SVC_LIGHTSTYLE, SVC_SPAWNSTATIC, SVC_SPAWNBASELINE, SVC_TEMP_ENTITY, SVC_CENTERPRINT,
		SVC_FINALE, SVC_UPDATEUSERINFO, SVC_DOWNLOAD, SVC_PLAYERINFO, SVC_NAILS,
		SVC_MODELLIST, SVC_SOUNDLIST, SVC_PACKETENTITIES, SVC_DELTAPACKETENTITIES,
		SVC_SETINFO, SVC_SERVERINFO, SVC_NAILS2,
	};
	for (int i = 0; i < 256; i++)
		svc_fixed[i] = -2;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		svc_fixed[fixed[i][0]] = fixed[i][1];
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		svc_fixed[other[i]] = -1;
}

static const int te_size[14] = {6, 6, 7, 6, 6, 14, 14, 6, 6, 14, 6, 6, 7, 6};

typedef struct {
	const char *stufftext[MAX_STUFF];
	int n_stufftext;
	int has_serverdata, servercount, playernum;
	int soundlist_next, modellist_next; /* -1: none in this payload */
	int n_origins;
	int origin_num[MAX_ORIGINS];
	double origin[MAX_ORIGINS][3];
	int disconnect;
	char parse_error[96];
} events_t;

typedef struct {
	const uint8_t *data;
	size_t len, pos;
	int bad;
} reader_t;

static int take(reader_t *r, size_t n)
{
	if (r->bad || r->pos + n > r->len) {
		if (!r->bad)
			r->bad = 1;
		return 0;
	}
	r->pos += n;
	return 1;
}

static int rbyte(reader_t *r)
{
	return take(r, 1) ? r->data[r->pos - 1] : 0;
}

static int rshort(reader_t *r)
{
	return take(r, 2) ? (int16_t)(r->data[r->pos - 2] | r->data[r->pos - 1] << 8) : 0;
}

static int32_t rlong(reader_t *r)
{
	return take(r, 4) ? (int32_t)get_long(r->data + r->pos - 4) : 0;
}

/* a NUL-terminated string inside the packet (NULL, and r->bad = 2, when unterminated) */
static const char *rstring(reader_t *r)
{
	const uint8_t *end;
	const char *s;
	if (r->bad)
		return NULL;
	end = memchr(r->data + r->pos, 0, r->len - r->pos);
	if (!end) {
		r->bad = 2;
		return NULL;
	}
	s = (const char *)r->data + r->pos;
	r->pos = end - r->data + 1;
	return s;
}

static void skip_delta_usercmd(reader_t *r)
{
	int bits = rbyte(r);
	static const int sizes[][2] = {{CM_ANGLE1, 2}, {CM_ANGLE2, 2}, {CM_ANGLE3, 2},
	                               {CM_FORWARD, 2}, {CM_SIDE, 2}, {CM_UP, 2},
	                               {CM_BUTTONS, 1}, {CM_IMPULSE, 1}};
	for (int i = 0; i < 8; i++)
		if (bits & sizes[i][0])
			take(r, sizes[i][1]);
	rbyte(r); /* msec */
}

static void skip_entity_deltas(reader_t *r)
{
	for (;;) {
		int word = rshort(r) & 0xffff, bits;
		if (r->bad || word == 0)
			return;
		bits = word & ~511;
		if (bits & (1 << 15)) /* U_MOREBITS */
			bits |= rbyte(r);
		if (bits & 4) /* U_MODEL */
			rbyte(r);
		if (bits & (1 << 13)) /* U_FRAME */
			rbyte(r);
		if (bits & 8) /* U_COLORMAP */
			rbyte(r);
		if (bits & 16) /* U_SKIN */
			rbyte(r);
		if (bits & 32) /* U_EFFECTS */
			rbyte(r);
		for (int axis = 0; axis < 3; axis++) {
			static const int origin[3] = {1 << 9, 1 << 10, 1 << 11};
			static const int angle[3] = {1, 1 << 12, 2};
			if (bits & origin[axis])
				take(r, 2);
			if (bits & angle[axis])
				rbyte(r);
		}
	}
}

static int list_message(reader_t *r)
{
	const char *s;
	rbyte(r); /* first index */
	while ((s = rstring(r)) && *s)
		;
	return rbyte(r); /* next index, 0 when the list is complete */
}

static void parse_server_message(const uint8_t *payload, size_t n, events_t *ev)
{
	reader_t r = {payload, n, 0, 0};
	ev->n_stufftext = ev->n_origins = ev->has_serverdata = ev->disconnect = 0;
	ev->soundlist_next = ev->modellist_next = -1;
	ev->parse_error[0] = 0;
	while (r.pos < r.len && !r.bad) {
		int code = rbyte(&r), fixed = svc_fixed[code];
		if (fixed == -2) {
			snprintf(ev->parse_error, sizeof(ev->parse_error), "unknown server message %d", code);
			return;
		}
		if (fixed >= 0) {
			take(&r, fixed);
			continue;
		}
		switch (code) {
		case SVC_BAD:
			snprintf(ev->parse_error, sizeof(ev->parse_error), "svc_bad");
			return;
		case SVC_DISCONNECT:
			ev->disconnect = 1;
			return;
		case SVC_PRINT:
			rbyte(&r);
			rstring(&r);
			break;
		case SVC_STUFFTEXT: {
			const char *s = rstring(&r);
			if (s && ev->n_stufftext < MAX_STUFF)
				ev->stufftext[ev->n_stufftext++] = s;
			break;
		}
		case SVC_CENTERPRINT:
		case SVC_FINALE:
			rstring(&r);
			break;
		case SVC_SERVERDATA: {
			int servercount;
			rlong(&r); /* protocol */
			servercount = rlong(&r);
			rstring(&r); /* game directory */
			/* bit 7 flags a spectator; our clients are players (see protocol.py) */
			ev->playernum = rbyte(&r);
			rstring(&r); /* level name */
			take(&r, 40); /* ten movevars */
			if (!r.bad) {
				ev->has_serverdata = 1;
				ev->servercount = servercount;
			}
			break;
		}
		case SVC_LIGHTSTYLE:
			rbyte(&r);
			rstring(&r);
			break;
		case SVC_SOUND: {
			int channel = rshort(&r) & 0xffff;
			if (channel & (1 << 15))
				rbyte(&r);
			if (channel & (1 << 14))
				rbyte(&r);
			take(&r, 7);
			break;
		}
		case SVC_SPAWNSTATIC:
			take(&r, 13);
			break;
		case SVC_SPAWNBASELINE:
			take(&r, 15);
			break;
		case SVC_TEMP_ENTITY: {
			int kind = rbyte(&r);
			if (r.bad)
				break;
			if (kind < 0 || kind > 13) {
				snprintf(ev->parse_error, sizeof(ev->parse_error), "unknown temp entity %d", kind);
				return;
			}
			take(&r, te_size[kind]);
			break;
		}
		case SVC_UPDATEUSERINFO:
			take(&r, 5);
			rstring(&r);
			break;
		case SVC_SETINFO:
			rbyte(&r);
			rstring(&r);
			rstring(&r);
			break;
		case SVC_SERVERINFO:
			rstring(&r);
			rstring(&r);
			break;
		case SVC_DOWNLOAD: {
			int size = rshort(&r);
			rbyte(&r);
			if (size > 0)
				take(&r, size);
			break;
		}
		case SVC_PLAYERINFO: {
			int num = rbyte(&r), flags = rshort(&r) & 0xffff;
			double origin[3];
			for (int i = 0; i < 3; i++)
				origin[i] = rshort(&r) / 8.0;
			rbyte(&r); /* frame */
			if (flags & 1) /* PF_MSEC */
				rbyte(&r);
			if (flags & 2) /* PF_COMMAND */
				skip_delta_usercmd(&r);
			for (int axis = 0; axis < 3; axis++)
				if (flags & (4 << axis)) /* PF_VELOCITY1.. */
					rshort(&r);
			if (flags & (1 << 5)) /* PF_MODEL */
				rbyte(&r);
			if (flags & (1 << 6)) /* PF_SKINNUM */
				rbyte(&r);
			if (flags & (1 << 7)) /* PF_EFFECTS */
				rbyte(&r);
			if (flags & (1 << 8)) /* PF_WEAPONFRAME */
				rbyte(&r);
			if (!r.bad) {
				int k;
				for (k = 0; k < ev->n_origins && ev->origin_num[k] != num; k++)
					;
				if (k == ev->n_origins && k < MAX_ORIGINS)
					ev->n_origins++;
				if (k < MAX_ORIGINS) {
					ev->origin_num[k] = num;
					memcpy(ev->origin[k], origin, sizeof(origin));
				}
			}
			break;
		}
		case SVC_NAILS:
		case SVC_NAILS2: {
			int count = rbyte(&r);
			take(&r, (size_t)count * (code == SVC_NAILS ? 6 : 7));
			break;
		}
		case SVC_MODELLIST: {
			int next = list_message(&r);
			if (!r.bad)
				ev->modellist_next = next;
			break;
		}
		case SVC_SOUNDLIST: {
			int next = list_message(&r);
			if (!r.bad)
				ev->soundlist_next = next;
			break;
		}
		case SVC_PACKETENTITIES:
			skip_entity_deltas(&r);
			break;
		case SVC_DELTAPACKETENTITIES:
			rbyte(&r);
			skip_entity_deltas(&r);
			break;
		}
	}
	if (r.bad)
		snprintf(ev->parse_error, sizeof(ev->parse_error), "%s",
		         r.bad == 2 ? "unterminated string" : "message runs past the packet");
}

/* ------------------------------------------------------------------------------------------ */
/* one client (clients._Client) */

enum { ST_CHALLENGE, ST_CONNECTING, ST_SIGNON, ST_ACTIVE, ST_DROPPED };
static const char *state_names[] = {"challenge", "connecting", "signon", "active", "dropped"};

typedef struct {
	int index, fd, state, servercount, playernum, begin_sent, parse_errors;
	long replies;
	double connected_at, began_at, last_oob;
	netchan_t chan;
	usercmd_t cmds[3];
	rng_t rng;
	long bot_frame;
	double yaw;
	uint32_t sent_seq[SENT_RING];
	double sent_time[SENT_RING];
	char last_command[64], last_parse_error[160];
} client_t;

typedef struct { double t; int32_t client, pad; } move_rec_t;
typedef struct { double t, rtt; int32_t client, pad; } reply_rec_t;
typedef struct { double t, x, y, z; int32_t client, pad; } origin_rec_t;
typedef struct { int32_t client, tick; double due, sent; } send_rec_t;

static client_t *clients;
static vec_t moves = {.item = sizeof(move_rec_t)};
static vec_t replies = {.item = sizeof(reply_rec_t)};
static vec_t origins = {.item = sizeof(origin_rec_t)};
static vec_t sends = {.item = sizeof(send_rec_t)};
static int active_clients;

static void send_packet(client_t *c, const uint8_t *data, size_t n)
{
	if (c->fd >= 0)
		(void)send(c->fd, data, n, 0); /* a refused or full socket loses it, as in Python */
}

static void send_oob(client_t *c, const char *text)
{
	uint8_t buf[512];
	size_t n = strlen(text);
	if (n > sizeof(buf) - 4)
		n = sizeof(buf) - 4;
	memset(buf, 0xff, 4);
	memcpy(buf + 4, text, n);
	send_packet(c, buf, n + 4);
}

static void command(client_t *c, const char *fmt, ...)
{
	uint8_t buf[256];
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = vsnprintf((char *)buf + 1, sizeof(buf) - 2, fmt, ap);
	va_end(ap);
	if (n < 0 || n > (int)sizeof(buf) - 3)
		n = sizeof(buf) - 3;
	snprintf(c->last_command, sizeof(c->last_command), "%.63s", (char *)buf + 1);
	buf[0] = CLC_STRINGCMD;
	buf[n + 1] = 0;
	queue_reliable(&c->chan, buf, (size_t)n + 2);
}

/* Python's str.isspace() and line boundaries of str.splitlines() for latin-1 text */
static int py_space(unsigned char ch)
{
	return ch == ' ' || (ch >= 9 && ch <= 13) || (ch >= 0x1c && ch <= 0x1f) || ch == 0x85 ||
	       ch == 0xa0;
}

static int py_line_break(unsigned char ch)
{
	return ch == '\n' || ch == '\r' || ch == 11 || ch == 12 || (ch >= 0x1c && ch <= 0x1e) ||
	       ch == 0x85 || ch == ';';
}

static void obey_line(client_t *c, const char *line, size_t n)
{
	while (n && py_space((unsigned char)line[0]))
		line++, n--;
	while (n && py_space((unsigned char)line[n - 1]))
		n--;
	if (n >= 4 && !memcmp(line, "cmd ", 4))
		command(c, "%.*s", (int)(n - 4), line + 4);
	else if (n == 5 && !memcmp(line, "skins", 5) && !c->begin_sent) {
		command(c, "begin %d", c->servercount);
		c->begin_sent = 1;
	} else if (n == 9 && !memcmp(line, "reconnect", 9))
		command(c, "new");
}

static void act(client_t *c, const events_t *ev, double now)
{
	if (ev->has_serverdata) {
		c->servercount = ev->servercount;
		c->playernum = ev->playernum;
		command(c, "soundlist %d 0", c->servercount);
	}
	if (ev->soundlist_next >= 0) {
		if (ev->soundlist_next)
			command(c, "soundlist %d %d", c->servercount, ev->soundlist_next);
		else
			command(c, "modellist %d 0", c->servercount);
	}
	if (ev->modellist_next >= 0) {
		if (ev->modellist_next)
			command(c, "modellist %d %d", c->servercount, ev->modellist_next);
		else
			command(c, "prespawn %d 0 0", c->servercount);
	}
	for (int i = 0; i < ev->n_stufftext; i++) {
		const char *text = ev->stufftext[i], *start = text;
		for (const char *p = text;; p++) {
			if (!*p || py_line_break((unsigned char)*p)) {
				obey_line(c, start, (size_t)(p - start));
				if (!*p)
					break;
				if (*p == '\r' && p[1] == '\n')
					p++;
				start = p + 1;
			}
		}
	}
	if (c->begin_sent && c->state == ST_SIGNON && !c->chan.reliable_len && !c->chan.pending_len) {
		c->state = ST_ACTIVE;
		c->began_at = now;
		active_clients++;
	}
	if (c->state == ST_ACTIVE)
		for (int k = 0; k < ev->n_origins; k++)
			if (ev->origin_num[k] == c->playernum) {
				origin_rec_t *o = vec_push(&origins);
				o->t = now;
				o->x = ev->origin[k][0];
				o->y = ev->origin[k][1];
				o->z = ev->origin[k][2];
				o->client = c->index;
				o->pad = 0;
			}
}

static void connectionless(client_t *c, const uint8_t *text, size_t n, double now)
{
	if (n >= 1 && text[0] == 'c' && c->state == ST_CHALLENGE) {
		char digits[32], msg[400];
		size_t nd = 0;
		for (size_t i = 1; i < n && nd < sizeof(digits) - 1; i++) {
			if ((text[i] >= '0' && text[i] <= '9') || (text[i] == '-' && nd == 0))
				digits[nd++] = text[i];
			else
				break;
		}
		digits[nd] = 0;
		snprintf(msg, sizeof(msg),
		         "connect %d %u %ld \"\\name\\bot%03d\\topcolor\\0\\bottomcolor\\0\\rate\\%ld"
		         "\\pmodel\\33168\\emodel\\6967\"\n",
		         PROTOCOL_VERSION, c->chan.qport, strtol(digits, NULL, 10), c->index,
		         plan.rate_bytes);
		send_oob(c, msg);
		c->state = ST_CONNECTING;
		c->last_oob = now;
	} else if (n >= 1 && text[0] == 'j' &&
	           (c->state == ST_CHALLENGE || c->state == ST_CONNECTING)) {
		c->state = ST_SIGNON;
		c->connected_at = now;
		command(c, "new");
	}
}

static events_t events;

static void datagram_received(client_t *c, const uint8_t *data, size_t n)
{
	double now = monotonic(), sent = NAN;
	size_t offset;
	uint32_t ack;
	if (n >= 4 && !memcmp(data, "\xff\xff\xff\xff", 4)) {
		connectionless(c, data + 4, n - 4, now);
		return;
	}
	offset = process(&c->chan, data, n);
	if (!offset)
		return;
	ack = c->chan.incoming_acknowledged;
	if (c->sent_seq[ack % SENT_RING] == ack) {
		sent = c->sent_time[ack % SENT_RING];
		c->sent_seq[ack % SENT_RING] = 0;
	}
	if (c->state == ST_ACTIVE) {
		if (!isnan(sent)) {
			reply_rec_t *r = vec_push(&replies);
			r->t = now;
			r->rtt = now - sent;
			r->client = c->index;
			r->pad = 0;
		}
		/* While playing, a reply is parsed only when it carries reliable data or to sample
		 * the player's origin at ~10 Hz (clients.py). */
		c->replies++;
		if (!(data[3] & 0x80) && c->replies % plan.origin_every)
			return;
	}
	parse_server_message(data + offset, n - offset, &events);
	if (events.parse_error[0]) {
		size_t show = n - offset < 48 ? n - offset : 48;
		int w = snprintf(c->last_parse_error, sizeof(c->last_parse_error), "%s in ",
		                 events.parse_error);
		c->parse_errors++;
		for (size_t i = 0; i < show && w + 3 < (int)sizeof(c->last_parse_error); i++)
			w += snprintf(c->last_parse_error + w, sizeof(c->last_parse_error) - w, "%02x",
			              data[offset + i]);
	}
	act(c, &events, now);
}

static usercmd_t bot_next_command(client_t *c)
{
	usercmd_t cmd = {0};
	long step = c->bot_frame % plan.cycle;
	int walking = step >= plan.idle;
	c->bot_frame++;
	if (step == plan.action_at) {
		int action = rng_integer(&c->rng, 3);
		if (action == plan.action_jump)
			cmd.buttons = BUTTON_JUMP;
		else if (action == plan.action_shot)
			cmd.buttons = BUTTON_ATTACK;
		else
			c->yaw = fmod(c->yaw + rng_uniform(&c->rng, 45, 315), 360);
	}
	cmd.msec = plan.msec;
	cmd.angles[1] = angle16(c->yaw);
	cmd.forward = walking ? WALK_SPEED : 0;
	return cmd;
}

/* send this client's packet for one client frame (_Client.tick) */
static void tick(client_t *c, double now)
{
	uint8_t packet[1600], move[64];
	uint32_t sequence;
	size_t n;
	if (c->fd < 0)
		return;
	if (c->state == ST_CHALLENGE || c->state == ST_CONNECTING) {
		if (now - c->last_oob >= plan.resend_s) {
			c->state = ST_CHALLENGE;
			send_oob(c, "getchallenge\n");
			c->last_oob = now;
		}
		return;
	}
	if (c->state == ST_DROPPED)
		return;
	if (c->state == ST_ACTIVE) {
		move_rec_t *m;
		c->cmds[0] = c->cmds[1];
		c->cmds[1] = c->cmds[2];
		c->cmds[2] = bot_next_command(c);
		n = move_message(move, c->chan.outgoing_sequence, c->cmds);
		n = transmit(&c->chan, packet, move, n, &sequence);
		c->sent_seq[sequence % SENT_RING] = sequence;
		c->sent_time[sequence % SENT_RING] = now;
		m = vec_push(&moves);
		m->t = now;
		m->client = c->index;
		m->pad = 0;
	} else {
		uint8_t nop = CLC_NOP;
		n = transmit(&c->chan, packet, &nop, 1, &sequence);
	}
	send_packet(c, packet, n);
}

static void drop(client_t *c)
{
	if (c->fd >= 0 && c->state != ST_CHALLENGE && c->state != ST_CONNECTING) {
		static const uint8_t cmd[] = {CLC_STRINGCMD, 'd', 'r', 'o', 'p', 0};
		for (int i = 0; i < 3; i++) {
			uint8_t packet[1600];
			uint32_t sequence;
			size_t n = transmit(&c->chan, packet, cmd, sizeof(cmd), &sequence);
			send_packet(c, packet, n);
		}
	}
	c->state = ST_DROPPED;
}

/* ------------------------------------------------------------------------------------------ */
/* the send schedule: a binary heap of (due, client, tick), ties by client as heapq's tuples */

typedef struct {
	double due;
	int client;
	long tick;
} slot_t;

static slot_t *heap;
static int heap_n;

static int before(const slot_t *a, const slot_t *b)
{
	return a->due < b->due || (a->due == b->due && a->client < b->client);
}

static void sift_down(int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < heap_n && before(&heap[l], &heap[m]))
			m = l;
		if (r < heap_n && before(&heap[r], &heap[m]))
			m = r;
		if (m == i)
			return;
		slot_t t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

/* ------------------------------------------------------------------------------------------ */

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void read_plan(const char *path)
{
	FILE *f = fopen(path, "r");
	char key[64];
	int client_lines = 0;
	if (!f)
		die(2, "cannot read the plan %s: %s", path, strerror(errno));
	plan.spin_s = 0.0003;
	plan.resend_s = 0.5;
	while (fscanf(f, "%63s", key) == 1) {
		double v;
		if (!strcmp(key, "client")) {
			int i;
			double phase;
			long first;
			if (fscanf(f, "%d %lf %ld", &i, &phase, &first) != 3 || i < 0 || i >= plan.clients)
				die(2, "bad client line in the plan");
			plan.phase_s[i] = phase;
			plan.first_tick[i] = first;
			client_lines++;
			continue;
		}
		if (!strcmp(key, "seed")) {
			unsigned long long s;
			if (fscanf(f, "%llu", &s) != 1)
				die(2, "bad seed in the plan");
			plan.seed = s;
			continue;
		}
		if (fscanf(f, "%lf", &v) != 1)
			die(2, "bad value for %s in the plan", key);
		if (!strcmp(key, "port")) plan.port = (int)v;
		else if (!strcmp(key, "clients")) {
			plan.clients = (int)v;
			if (plan.clients < 1 || plan.clients > 4096)
				die(2, "clients must be in [1, 4096]");
			plan.phase_s = calloc(plan.clients, sizeof(double));
			plan.first_tick = calloc(plan.clients, sizeof(long));
		}
		else if (!strcmp(key, "rate_hz")) plan.rate_hz = v;
		else if (!strcmp(key, "msec")) plan.msec = (int)v;
		else if (!strcmp(key, "rate_bytes")) plan.rate_bytes = (long)v;
		else if (!strcmp(key, "warmup_s")) plan.warmup_s = v;
		else if (!strcmp(key, "duration_s")) plan.duration_s = v;
		else if (!strcmp(key, "signon_timeout_s")) plan.signon_timeout_s = v;
		else if (!strcmp(key, "origin_every")) plan.origin_every = (int)v;
		else if (!strcmp(key, "idle")) plan.idle = (int)v;
		else if (!strcmp(key, "action_at")) plan.action_at = (int)v;
		else if (!strcmp(key, "cycle")) plan.cycle = (int)v;
		else if (!strcmp(key, "action_jump")) plan.action_jump = (int)v;
		else if (!strcmp(key, "action_shot")) plan.action_shot = (int)v;
		else if (!strcmp(key, "spin_s")) plan.spin_s = v;
		else if (!strcmp(key, "resend_s")) plan.resend_s = v;
		else die(2, "unknown plan key %s", key);
	}
	fclose(f);
	if (!plan.clients || client_lines != plan.clients)
		die(2, "the plan names %d clients but has %d client lines", plan.clients, client_lines);
	if (plan.rate_hz <= 0 || plan.cycle < 1 || plan.origin_every < 1 || plan.port <= 0 ||
	    plan.rate_bytes <= 0)
		die(2, "the plan lacks rate_hz, rate_bytes, cycle, origin_every or port");
}

static void read_table(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f || fread(chktbl, 1, TABLE_SIZE, f) != TABLE_SIZE)
		die(2, "cannot read the %d-byte checksum table %s", TABLE_SIZE, path);
	fclose(f);
}

static void write_file(const char *dir, const char *name, const vec_t *v)
{
	char path[4096];
	FILE *f;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || (v->len && fwrite(v->data, v->item, v->len, f) != v->len) || fclose(f))
		die(4, "cannot write %s: %s", path, strerror(errno));
}

typedef struct {
	double connected_at, began_at;
	int32_t index, playernum, parse_errors, state;
} client_rec_t;

static void write_outputs(const char *dir, double t0, double start, double end,
                          double signed_on_at, double cpu_s, double wall_s, double busy_s,
                          double window_cpu_s)
{
	char path[4096];
	FILE *f;
	vec_t recs = {.item = sizeof(client_rec_t)};
	for (int i = 0; i < plan.clients; i++) {
		client_rec_t *r = vec_push(&recs);
		r->connected_at = clients[i].connected_at;
		r->began_at = clients[i].began_at;
		r->index = i;
		r->playernum = clients[i].playernum;
		r->parse_errors = clients[i].parse_errors;
		r->state = clients[i].state;
	}
	write_file(dir, "clients.bin", &recs);
	write_file(dir, "moves.bin", &moves);
	write_file(dir, "replies.bin", &replies);
	write_file(dir, "origins.bin", &origins);
	write_file(dir, "sends.bin", &sends);
	snprintf(path, sizeof(path), "%s/meta.txt", dir);
	f = fopen(path, "w");
	if (!f)
		die(4, "cannot write %s: %s", path, strerror(errno));
	fprintf(f, "t0 %.9f\nwindow_start %.9f\nwindow_end %.9f\nsigned_on_at %.9f\n", t0, start,
	        end, signed_on_at);
	fprintf(f, "cpu_s %.9f\nwall_s %.9f\nclients %d\n", cpu_s, wall_s, plan.clients);
	fprintf(f, "window_busy_s %.9f\nwindow_cpu_s %.9f\n", busy_s, window_cpu_s);
	if (fclose(f))
		die(4, "cannot write %s", path);
}

static void selftest(void)
{
	/* each stdin line: sequence, then 3 x (msec yaw0 yaw1 yaw2 forward side up buttons
	 * impulse); each output line: the clc_move's bytes in hex */
	char line[1024];
	while (fgets(line, sizeof(line), stdin)) {
		usercmd_t cmds[3];
		unsigned long sequence;
		char *p = line, *end;
		uint8_t out[128];
		size_t n;
		sequence = strtoul(p, &end, 10);
		if (end == p)
			continue;
		p = end;
		for (int k = 0; k < 3; k++) {
			double f[9];
			for (int j = 0; j < 9; j++) {
				f[j] = strtod(p, &end);
				if (end == p)
					die(2, "selftest: a line needs a sequence and 27 numbers");
				p = end;
			}
			cmds[k].msec = (int)f[0];
			for (int a = 0; a < 3; a++)
				cmds[k].angles[a] = angle16(f[1 + a]);
			cmds[k].forward = (int)f[4];
			cmds[k].side = (int)f[5];
			cmds[k].up = (int)f[6];
			cmds[k].buttons = (int)f[7];
			cmds[k].impulse = (int)f[8];
		}
		n = move_message(out, (uint32_t)sequence, cmds);
		for (size_t i = 0; i < n; i++)
			printf("%02x", out[i]);
		putchar('\n');
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *plan_path = NULL, *table_path = NULL, *out_dir = NULL;
	int self_test = 0, epfd;
	double t0, cpu0, wall0, signon_deadline, start = NAN, end = INFINITY, signed_on_at = NAN;
	double period, now;
	int have_window = 0, failed = 0;
	/* the measured window's busy time (sending, reading and handling replies; not sleeping or
	 * polling empty sockets) and CPU time: the spin before each send makes the CPU share
	 * approach 100 % when sends are < 0.3 ms apart, the busy share measures the work */
	double busy_s = 0.0, window_cpu0 = NAN, window_cpu_s = NAN;
	struct sockaddr_in server;
	struct epoll_event *ready;
	char failure[1024] = "";

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--selftest"))
			self_test = 1;
		else if (!strcmp(argv[i], "--plan") && i + 1 < argc)
			plan_path = argv[++i];
		else if (!strcmp(argv[i], "--table") && i + 1 < argc)
			table_path = argv[++i];
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out_dir = argv[++i];
		else
			die(2, "usage: loadgen --plan FILE --table FILE --out DIR | --selftest --table FILE");
	}
	crc_init();
	svc_init();
	if (!table_path)
		die(2, "--table FILE is required");
	read_table(table_path);
	if (self_test) {
		selftest();
		return 0;
	}
	if (!plan_path || !out_dir)
		die(2, "--plan FILE and --out DIR are required");

	/* die with the parent (simsrv), as the server does */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		die(4, "the parent is gone");
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);

	read_plan(plan_path);
	period = 1.0 / plan.rate_hz;
	clients = calloc(plan.clients, sizeof(client_t));
	heap = calloc(plan.clients, sizeof(slot_t));
	ready = calloc(plan.clients, sizeof(struct epoll_event));
	if (!clients || !heap || !ready)
		die(4, "out of memory");
	for (int i = 0; i < plan.clients; i++) {
		client_t *c = &clients[i];
		c->index = i;
		c->fd = -1;
		c->playernum = -1;
		c->connected_at = c->began_at = NAN;
		c->last_oob = -INFINITY;
		c->chan.qport = (uint16_t)((i * 7919 + 1234) & 0xffff);
		c->chan.outgoing_sequence = 1;
		rng_seed(&c->rng, plan.seed, (uint64_t)i);
		c->bot_frame = rng_integer(&c->rng, plan.cycle);
		c->yaw = rng_uniform(&c->rng, 0, 360);
	}

	cpu0 = process_cpu();
	wall0 = monotonic();
	t0 = monotonic() + 0.05;
	for (int i = 0; i < plan.clients; i++) {
		heap[i].due = t0 + plan.phase_s[i] + plan.first_tick[i] * period;
		heap[i].client = i;
		heap[i].tick = plan.first_tick[i];
	}
	heap_n = plan.clients;
	for (int i = heap_n / 2 - 1; i >= 0; i--)
		sift_down(i);
	signon_deadline = t0 + plan.signon_timeout_s;

	memset(&server, 0, sizeof(server));
	server.sin_family = AF_INET;
	server.sin_port = htons(plan.port);
	server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		die(4, "epoll_create1: %s", strerror(errno));
	for (int i = 0; i < plan.clients; i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&server, sizeof(server)) < 0 ||
		    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
			die(4, "client %d's socket: %s", i, strerror(errno));
		clients[i].fd = fd;
	}

	while (heap_n && !stop_signal) {
		double wait;
		int n_ready;
		/* 1. every send that is due, first: the clients' send times are the experiment */
		double phase_start = now = monotonic();
		int in_window = have_window && start <= now && now <= end;
		if (have_window && isnan(window_cpu0) && now >= start)
			window_cpu0 = process_cpu();
		if (!isnan(window_cpu0) && isnan(window_cpu_s) && now > end)
			window_cpu_s = process_cpu() - window_cpu0;
		while (heap[0].due <= now) {
			slot_t s = heap[0];
			heap[0].due = t0 + plan.phase_s[s.client] + (s.tick + 1) * period;
			heap[0].tick = s.tick + 1;
			sift_down(0);
			tick(&clients[s.client], now);
			if (have_window && start <= now && now <= end) {
				send_rec_t *r = vec_push(&sends);
				r->client = s.client;
				r->tick = (int32_t)s.tick;
				r->due = s.due;
				r->sent = monotonic();
			}
			now = monotonic();
		}
		if (in_window)
			busy_s += now - phase_start;
		if (!have_window) {
			if (active_clients == plan.clients) {
				signed_on_at = now;
				start = now + plan.warmup_s;
				end = start + plan.duration_s;
				have_window = 1;
			} else if (now > signon_deadline) {
				int stuck = 0, shown = 0, w;
				for (int i = 0; i < plan.clients; i++)
					stuck += clients[i].state != ST_ACTIVE;
				w = snprintf(failure, sizeof(failure),
				             "%d of %d clients did not sign on within %g s (", stuck,
				             plan.clients, plan.signon_timeout_s);
				for (int i = 0; i < plan.clients && shown < 2; i++) {
					client_t *c = &clients[i];
					if (c->state == ST_ACTIVE)
						continue;
					if (w < (int)sizeof(failure))
						w += snprintf(failure + w, sizeof(failure) - w,
						              "%sclient %d: %s, last command '%s', %d unparsed replies %s",
						              shown ? "; " : "", i, state_names[c->state],
						              c->last_command, c->parse_errors, c->last_parse_error);
					shown++;
				}
				if (w < (int)sizeof(failure))
					snprintf(failure + w, sizeof(failure) - w, ")");
				failed = 1;
				break;
			}
		} else if (now >= end + 0.05)
			break;
		/* 2. replies until the next send is due: sleep with microsecond resolution up to
		 * spin_s before it, then poll without blocking; never read once a send is due */
		wait = heap[0].due - monotonic() - plan.spin_s;
		{
			struct pollfd pfd = {.fd = epfd, .events = POLLIN};
			struct timespec ts = {0, 0};
			if (wait > 0) {
				ts.tv_sec = (time_t)wait;
				ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
			}
			if (ppoll(&pfd, 1, &ts, NULL) <= 0)
				continue;
		}
		n_ready = epoll_wait(epfd, ready, plan.clients, 0);
		phase_start = monotonic();
		for (int k = 0; k < n_ready; k++) {
			client_t *c = &clients[ready[k].data.u32];
			while (heap[0].due > monotonic()) {
				uint8_t buf[8192];
				ssize_t got = recv(c->fd, buf, sizeof(buf) - 1, 0);
				if (got < 0)
					break; /* EAGAIN, or a refused port */
				buf[got] = 0;
				datagram_received(c, buf, (size_t)got);
			}
		}
		if (in_window)
			busy_s += monotonic() - phase_start;
	}
	for (int i = 0; i < plan.clients; i++)
		drop(&clients[i]);
	for (int i = 0; i < plan.clients; i++)
		close(clients[i].fd);
	if (stop_signal)
		return 128 + stop_signal;
	if (failed) {
		fprintf(stderr, "%s\n", failure);
		return 3;
	}
	write_outputs(out_dir, t0, start, end, signed_on_at, process_cpu() - cpu0, monotonic() - wall0,
	              busy_s, window_cpu_s);
	return 0;
}
