/*
 * armctl.ik._core: the damped-least-squares IK kernel in C.
 *
 * The same algorithm, operation for operation, as armctl.ik._dls_py (the
 * pure-Python reference, used when this extension is not built): adaptive
 * Levenberg-Marquardt damping, steps clipped to the joint limits, joints
 * whose step crosses a limit pinned there while the others are solved again
 * for what is left of the error, and an early end after three slow steps.
 * A 2-link arm runs as three links with a zero-length third link pinned at 0.
 *
 * On top of it, armctl.ik.solve(method="dls", phi=None), every case of it,
 * with the same starting points in the same order: the target (or, out of
 * reach, the closest point of the reach annulus) from the closed-form pose
 * nearest q0 inside the limits for 2 links or out of reach; else from q0,
 * then from the closed-form poses of ik.closest.start_candidates(want=2, coarse=True) (or
 * its near misses) when that stalls; when no start reaches the goal, the pose
 * inside the limits closest to the target (ik.closest.closest_pose, exact). Only bad
 * numbers return None (armctl.ik's checks then say what is wrong).
 *
 *   dls(links, lo, hi, tx, ty, q0, tol, max_iter, lam)
 *       -> (q tuple, err, iterations, fk_evals, jac_evals, max_step)
 *   solve(links, lo, hi, target, q0, tol, max_iter)
 *       -> (q tuple, err, iterations, fk_evals, jac_evals, max_step, restarts,
 *           shortfall, blocked) or None; blocked: 1 if no pose inside the
 *           limits reaches the target (shortfall: how far the closest is)
 *   solve_rows(links, lo, hi, targets, q0s, q, out, tol, max_iter) -> None
 *       targets (m, 2), q0s and q (m, n), out (m, 4) float64 buffers: per row
 *       q the solution, out [1 solved, 2 blocked, 0 bad numbers (take the
 *       general path), err, iterations, shortfall].
 *
 * links, lo, hi, q0: sequences of 2 or 3 floats (m, rad).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
	double q[3];
	double c[3], s[3]; /* the link vectors at q (x and y components) */
	double err;
	long it, fk_evals, jac_evals;
	double max_step;
} run_t;

/* 1 if a and b are the same double bit for bit (then cos and sin of them are too; a == b is not enough: +0.0 and
 * -0.0 have sines of opposite signs) */
static inline int same_bits(double a, double b)
{
	uint64_t x, y;
	memcpy(&x, &a, sizeof x);
	memcpy(&y, &b, sizeof y);
	return x == y;
}

/* l cos(angle) and l sin(angle) into *c and *s, unless angle is prev bit for bit: then *c and *s (which hold them
 * for prev) are kept. A joint pinned at a limit keeps its angle from one step to the next */
static inline void link_at(double l, double angle, double prev, double *c, double *s)
{
	if (same_bits(angle, prev))
		return;
	*c = l * cos(angle);
	*s = l * sin(angle);
}

/* Python's min(max(v, lo), hi), NaN handling included */
static inline double clampd(double v, double lo, double hi)
{
	double m = (lo > v) ? lo : v;
	return (hi < m) ? hi : m;
}

/* dq = J^T (J J^T + lam2 I)^-1 e for a 2x3 J given by columns; 0 if singular */
static int step3(double j1x, double j1y, double j2x, double j2y, double j3x, double j3y, double ex, double ey,
		 double lam2, double d[3])
{
	double a11 = j1x * j1x + j2x * j2x + j3x * j3x + lam2;
	double a12 = j1x * j1y + j2x * j2y + j3x * j3y;
	double a22 = j1y * j1y + j2y * j2y + j3y * j3y + lam2;
	double det = a11 * a22 - a12 * a12;
	if (!(det > 1e-300))
		return 0;
	double y1 = (a22 * ex - a12 * ey) / det;
	double y2 = (a11 * ey - a12 * ex) / det;
	d[0] = j1x * y1 + j1y * y2;
	d[1] = j2x * y1 + j2y * y2;
	d[2] = j3x * y1 + j3y * y2;
	return 1;
}

/* cs0: NULL, or the link vectors at q0 clipped to the limits (c1, c2, c3, s1, s2, s3), 3 links only */
static void dls(int n, const double *L, const double *lo, const double *hi, double tx, double ty, const double *q0,
		double tol, long max_iter, double lam, const double *cs0, run_t *run)
{
	double l1 = L[0], l2 = L[1], l3 = n == 3 ? L[2] : 0.0;
	double lo1 = lo[0], lo2 = lo[1], hi1 = hi[0], hi2 = hi[1];
	double lo3 = n == 3 ? lo[2] : 0.0, hi3 = n == 3 ? hi[2] : 0.0;
	double q1 = clampd(q0[0], lo1, hi1);
	double q2 = clampd(q0[1], lo2, hi2);
	double q3 = n == 3 ? clampd(q0[2], lo3, hi3) : 0.0;
	double reach = l1 + l2 + l3;
	double lam_min = 1e-12 * reach, lam_max = 1e4 * reach;
	double a2 = q1 + q2, a3 = a2 + q3;
	double p2 = a2, p3 = a3; /* the angles of links 2 and 3 at q (q1 is link 1's) */
	double c1, s1, c2, s2, c3, s3;
	if (cs0) {
		c1 = cs0[0], c2 = cs0[1], c3 = cs0[2], s1 = cs0[3], s2 = cs0[4], s3 = cs0[5];
	} else {
		c1 = l1 * cos(q1), s1 = l1 * sin(q1), c2 = l2 * cos(a2), s2 = l2 * sin(a2);
		c3 = l3 * cos(a3), s3 = l3 * sin(a3);
	}
	double x = c1 + c2 + c3, y = s1 + s2 + s3;
	double err = sqrt((tx - x) * (tx - x) + (ty - y) * (ty - y));
	long it = 0, slow = 0, fk_evals = 1, jac_evals = 1;
	double max_step = 0.0;
	double d[3], r[3];

	while (err > tol && it < max_iter) {
		it++;
		double ex = tx - x, ey = ty - y;
		double j3x = -s3, j3y = c3;
		double j2x = j3x - s2, j2y = j3y + c2;
		double j1x = j2x - s1, j1y = j2y + c1;
		double lam2 = lam * lam;
		if (!step3(j1x, j1y, j2x, j2y, j3x, j3y, ex, ey, lam2, d)) {
			lam = fmax(lam * 10.0, 1e-6 * reach);
			if (lam > lam_max)
				break;
			continue;
		}
		double d1 = d[0], d2 = d[1], d3 = d[2];
		int b1 = (d1 < 0.0 && q1 + d1 < lo1) || (d1 > 0.0 && q1 + d1 > hi1);
		int b2 = (d2 < 0.0 && q2 + d2 < lo2) || (d2 > 0.0 && q2 + d2 > hi2);
		int b3 = (d3 < 0.0 && q3 + d3 < lo3) || (d3 > 0.0 && q3 + d3 > hi3);
		if ((b1 || b2 || b3) && !(b1 && b2 && b3)) {
			double f1 = b1 ? ((d1 < 0.0 ? lo1 : hi1) - q1) : 0.0;
			double f2 = b2 ? ((d2 < 0.0 ? lo2 : hi2) - q2) : 0.0;
			double f3 = b3 ? ((d3 < 0.0 ? lo3 : hi3) - q3) : 0.0;
			double rx = ex - j1x * f1 - j2x * f2 - j3x * f3;
			double ry = ey - j1y * f1 - j2y * f2 - j3y * f3;
			if (step3(b1 ? 0.0 : j1x, b1 ? 0.0 : j1y, b2 ? 0.0 : j2x, b2 ? 0.0 : j2y, b3 ? 0.0 : j3x,
				  b3 ? 0.0 : j3y, rx, ry, lam2, r)) {
				d1 = b1 ? f1 : r[0];
				d2 = b2 ? f2 : r[1];
				d3 = b3 ? f3 : r[2];
			}
		}
		double n1 = clampd(q1 + d1, lo1, hi1);
		double n2 = clampd(q2 + d2, lo2, hi2);
		double n3 = clampd(q3 + d3, lo3, hi3);
		a2 = n1 + n2;
		a3 = a2 + n3;
		double k1 = c1, t1 = s1, k2 = c2, t2 = s2, k3 = c3, t3 = s3;
		link_at(l1, n1, q1, &k1, &t1);
		link_at(l2, a2, p2, &k2, &t2);
		link_at(l3, a3, p3, &k3, &t3);
		double nx = k1 + k2 + k3, ny = t1 + t2 + t3;
		fk_evals++;
		double new_err = sqrt((tx - nx) * (tx - nx) + (ty - ny) * (ty - ny));
		if (new_err < err) {
			slow = new_err > 0.5 * err ? slow + 1 : 0;
			if (slow >= 3 && lam < 1e-3 * reach)
				break;
			double m1 = fabs(n1 - q1), m2 = fabs(n2 - q2), m3 = fabs(n3 - q3);
			if (m1 > max_step)
				max_step = m1;
			if (m2 > max_step)
				max_step = m2;
			if (m3 > max_step)
				max_step = m3;
			q1 = n1;
			q2 = n2;
			q3 = n3;
			p2 = a2;
			p3 = a3;
			c1 = k1;
			s1 = t1;
			c2 = k2;
			s2 = t2;
			c3 = k3;
			s3 = t3;
			x = nx;
			y = ny;
			err = new_err;
			jac_evals++;
			lam = fmax(lam * 0.1, lam_min);
		} else {
			lam *= 10.0;
			if (lam > lam_max)
				break;
		}
	}
	run->q[0] = q1;
	run->q[1] = q2;
	run->q[2] = q3;
	run->c[0] = c1;
	run->c[1] = c2;
	run->c[2] = c3;
	run->s[0] = s1;
	run->s[1] = s2;
	run->s[2] = s3;
	run->err = err;
	run->it = it;
	run->fk_evals = fk_evals;
	run->jac_evals = jac_evals;
	run->max_step = max_step;
}

/* ------------------------------------------------------------------------ */
/* Closed form (ik.analytic_2link, _nearest_turn, _fit, _pose_at_phi)        */

#define TWO_PI (2.0 * M_PI)

typedef struct {
	int n;
	double L[3], lo[3], hi[3];
} arm_t;

/* both (q1, q2) of a 2-link arm reaching (x, y): elbow up first; returns the count */
static int analytic2(double l1, double l2, double x, double y, double sols[2][2])
{
	double r2 = x * x + y * y;
	double c2 = (r2 - l1 * l1 - l2 * l2) / (2.0 * l1 * l2);
	if (c2 > 1.0 + 1e-12 || c2 < -1.0 - 1e-12)
		return 0;
	c2 = fmin(1.0, fmax(-1.0, c2));
	double s2 = 1.0 - fabs(c2) < 1e-12 ? 0.0 : sqrt(1.0 - c2 * c2);
	double base = atan2(y, x);
	/* atan2 is odd in y: the elbow-up angles are the elbow-down ones negated */
	double elbow = atan2(s2, c2), off = atan2(l2 * s2, l1 + l2 * c2);
	if (!(s2 > 0.0)) {
		sols[0][1] = elbow;
		sols[0][0] = base - off;
		return 1;
	}
	sols[0][1] = -elbow;
	sols[0][0] = base + off;
	sols[1][1] = elbow;
	sols[1][0] = base - off;
	return 2;
}

/* angle + 2 pi k nearest ref inside [lo, hi] (clipped onto it within 1e-9); 0 if none. As
 * kinematics.nearest_turn, tie for tie: the turns tried in the order k, k - 1, k + 1 (the first of two
 * equally near wins) and compared before the clip (a turn 1 ulp beyond a limit is not made nearer by it) */
static int nearest_turn(double angle, double ref, double lo, double hi, double *out)
{
	if (lo <= angle && angle <= hi && fabs(angle - ref) <= M_PI) {
		*out = angle;
		return 1;
	}
	static const double order[3] = { 0.0, -1.0, 1.0 };
	double k = nearbyint((ref - angle) / TWO_PI);
	int found = 0;
	double best = 0.0;
	for (int j = 0; j < 3; j++) {
		double v = angle + TWO_PI * (k + order[j]);
		if (lo - 1e-9 <= v && v <= hi + 1e-9 && (!found || fabs(v - ref) < fabs(best - ref))) {
			best = v;
			found = 1;
		}
	}
	*out = found ? clampd(best, lo, hi) : 0.0;
	return found;
}

/* each joint at its turn nearest q0 inside the limits; returns the violation (rad), 0 if inside */
static double fit(const arm_t *a, const double *q, const double *q0, double *pose)
{
	double over = 0.0;
	for (int i = 0; i < a->n; i++) {
		double w;
		if (!nearest_turn(q[i], q0[i], a->lo[i], a->hi[i], &w)) {
			w = q[i] + TWO_PI * nearbyint((0.5 * (a->lo[i] + a->hi[i]) - q[i]) / TWO_PI);
			double m = a->lo[i] - w;
			if (w - a->hi[i] > m)
				m = w - a->hi[i];
			if (0.0 > m)
				m = 0.0;
			over += m;
			w = clampd(w, a->lo[i], a->hi[i]);
		}
		pose[i] = w;
	}
	return over;
}

/* 3-link closed form at tool angle ph: branch 0 elbow up, 1 elbow down; 0 if out of reach */
/* both branches of it (branch 1 repeats branch 0 when there is one pose); returns 0 if out of reach */
static int poses_at_phi(const arm_t *a, double gx, double gy, double ph, double q[2][3])
{
	double sols[2][2];
	int count = analytic2(a->L[0], a->L[1], gx - a->L[2] * cos(ph), gy - a->L[2] * sin(ph), sols);
	for (int b = 0; b < count; b++) {
		q[b][0] = sols[b][0];
		q[b][1] = sols[b][1];
		q[b][2] = ph - q[b][0] - q[b][1];
	}
	if (count == 1)
		memcpy(q[1], q[0], sizeof q[0]);
	return count;
}

static int pose_at_phi(const arm_t *a, double gx, double gy, double ph, int branch, double q[3])
{
	double both[2][3];
	if (!poses_at_phi(a, gx, gy, ph, both))
		return 0;
	memcpy(q, both[branch], sizeof both[0]);
	return 1;
}

static const int COARSE_DEG[] = { 0, 30, -30, 60, -60, 90, -90, 120, -120, 150, -150, 180 };
#define MAX_CAND 8
#define MAX_PHIS (12 + 74)
#define MAX_MISSES 3

static double dist2(int n, const double *q, const double *q0)
{
	double s = 0.0;
	for (int i = 0; i < n; i++)
		s += (q[i] - q0[i]) * (q[i] - q0[i]);
	return s;
}

/* a closed-form pose outside the limits: its violation, tool angle and branch (3 links), and the pose clipped */
typedef struct {
	double over, ph;
	int b;
	double pose[3];
} miss_t;

/* Python's order of the tuples (over, ph, b, pose) */
static int miss_before(const miss_t *x, const miss_t *y)
{
	if (x->over != y->over)
		return x->over < y->over;
	if (x->ph != y->ph)
		return x->ph < y->ph;
	if (x->b != y->b)
		return x->b < y->b;
	for (int i = 0; i < 3; i++)
		if (x->pose[i] != y->pose[i])
			return x->pose[i] < y->pose[i];
	return 0;
}

/* stable insertion sort: by (over, ph, b, pose) when full, else by over alone */
static void sort_misses(miss_t *m, int count, int full)
{
	for (int i = 1; i < count; i++) {
		miss_t tmp = m[i];
		int j = i - 1;
		while (j >= 0 && (full ? miss_before(&tmp, &m[j]) : tmp.over < m[j].over)) {
			m[j + 1] = m[j];
			j--;
		}
		m[j + 1] = tmp;
	}
}

/* the violation of the 3-link closed form at tool angle ph, branch b (inf out of reach), and its pose */
static double violation(const arm_t *a, double gx, double gy, const double *q0, double ph, int b, double pose[3])
{
	double q[3];
	if (!pose_at_phi(a, gx, gy, ph, b, q))
		return INFINITY;
	return fit(a, q, q0, pose);
}

/* ik.closest.start_candidates (phi None): poses inside the limits reaching (gx, gy), nearest q0 first, and into
 * misses (if not NULL) the first MAX_MISSES near misses, least violation first; returns how many
 * poses, *nmiss how many misses. coarse: 0, 1 (coarse angles first) or COARSE_ONLY */
#define COARSE_ONLY 2
static int candidates(const arm_t *a, double gx, double gy, const double *q0, int want, int coarse,
		      double out[MAX_CAND][3], double misses[MAX_MISSES][3], int *nmiss)
{
	int count = 0, nm = 0;
	double pose[3];
	miss_t grid[2 * MAX_PHIS];
	if (a->n == 2) {
		double sols[2][2];
		int ns = analytic2(a->L[0], a->L[1], gx, gy, sols);
		for (int i = 0; i < ns; i++) {
			double over = fit(a, sols[i], q0, pose);
			if (over <= 0.0) {
				out[count][0] = pose[0];
				out[count][1] = pose[1];
				count++;
			} else {
				grid[nm] = (miss_t){ over, 0.0, 0, { pose[0], pose[1], 0.0 } };
				nm++;
			}
		}
	} else {
		double phi0 = 0.0 + q0[0] + q0[1] + q0[2];
		/* the order of ik.closest.start_candidates: coarse angles, then phi0, the target's direction, phi0 +-5, +-10, ... */
		double phis[MAX_PHIS];
		int np = 0;
		if (coarse)
			for (int i = 0; i < 12; i++)
				phis[np++] = phi0 + COARSE_DEG[i] * (M_PI / 180.0);
		if (coarse != COARSE_ONLY) {
			phis[np++] = phi0 + 0 * (M_PI / 180.0);
			phis[np++] = atan2(gy, gx);
			for (int d = 5; d <= 180; d += 5) {
				phis[np++] = phi0 + d * (M_PI / 180.0);
				if (d != 180)
					phis[np++] = phi0 + d * (M_PI / 180.0) * -1;
			}
		}
		for (int k = 0; k < np && count < want; k++) {
			double both[2][3];
			if (!poses_at_phi(a, gx, gy, phis[k], both))
				continue;
			for (int b = 0; b < 2; b++) {
				double over = fit(a, both[b], q0, pose);
				if (over > 0.0) {
					grid[nm] = (miss_t){ over, phis[k], b, { pose[0], pose[1], pose[2] } };
					nm++;
				} else if (count < MAX_CAND) {
					memcpy(out[count], pose, sizeof pose);
					count++;
				}
			}
		}
		if (!count && nm && coarse != COARSE_ONLY) {
			/* no grid angle fits: minimise the violation over the tool angle around the best near
			 * misses (golden section), which finds windows narrower than the grid */
			miss_t best[2 * MAX_PHIS];
			memcpy(best, grid, nm * sizeof *grid);
			sort_misses(best, nm, 1);
			const double golden = (sqrt(5.0) - 1.0) / 2.0, step = 5.0 * (M_PI / 180.0);
			for (int s = 0; s < nm && s < 4; s++) {
				int b = best[s].b;
				double lo = best[s].ph - step, hi = best[s].ph + step;
				double x1 = hi - golden * (hi - lo), x2 = lo + golden * (hi - lo);
				double f1 = violation(a, gx, gy, q0, x1, b, pose), f2 = violation(a, gx, gy, q0, x2, b, pose);
				for (int it = 0; it < 40; it++) {
					if (fmin(f1, f2) == 0.0)
						break;
					if (f1 < f2) {
						hi = x2;
						x2 = x1;
						f2 = f1;
						x1 = hi - golden * (hi - lo);
						f1 = violation(a, gx, gy, q0, x1, b, pose);
					} else {
						lo = x1;
						x1 = x2;
						f1 = f2;
						x2 = lo + golden * (hi - lo);
						f2 = violation(a, gx, gy, q0, x2, b, pose);
					}
				}
				if (violation(a, gx, gy, q0, f1 <= f2 ? x1 : x2, b, pose) == 0.0) {
					memcpy(out[count], pose, sizeof pose);
					count++;
					break;
				}
			}
		}
	}
	/* stable insertion sort by distance to q0 (Python's list.sort) */
	for (int i = 1; i < count; i++) {
		double tmp[3];
		memcpy(tmp, out[i], sizeof tmp);
		double key = dist2(a->n, tmp, q0);
		int j = i - 1;
		while (j >= 0 && dist2(a->n, out[j], q0) > key) {
			memcpy(out[j + 1], out[j], sizeof tmp);
			j--;
		}
		memcpy(out[j + 1], tmp, sizeof tmp);
	}
	if (misses) {
		sort_misses(grid, nm, 0);
		*nmiss = nm < MAX_MISSES ? nm : MAX_MISSES;
		for (int i = 0; i < *nmiss; i++)
			memcpy(misses[i], grid[i].pose, sizeof grid[i].pose);
	}
	return count;
}

/* ------------------------------------------------------------------------ */
/* The closest pose inside the limits (ik.closest.closest_pose, ik._face, ik.closest.reachable3) */

#define TIE_M 1e-12
#define DEGENERATE_M 1e-12
#define MAX_FACE 8

/* ik._chain: from joint i to joint j (n: the tool) in the frame of link i */
static void chain(const arm_t *a, const double *q, int i, int j, double *x, double *y)
{
	double rel = 0.0;
	*x = *y = 0.0;
	for (int k = i; k < j; k++) {
		if (k > i)
			rel += q[k];
		*x += a->L[k] * cos(rel);
		*y += a->L[k] * sin(rel);
	}
}

/* ik._face: the stationary points of the distance to (tx, ty) on the face f (joint i's state: digit i of
 * f in base 3, joint 0 the most significant; 0 lower limit, 1 upper limit, 2 free) as raw angles into
 * out; returns how many, *exact how many of the first reach the target */
static int face(const arm_t *a, int f, double tx, double ty, const double *q0, double out[MAX_FACE][3], int *exact)
{
	int n = a->n, free[3], nfree = 0;
	double q[3] = { 0.0, 0.0, 0.0 };
	*exact = 0;
	for (int i = 0, div = n == 3 ? 9 : 3; i < n; i++, div /= 3) {
		int s = (f / div) % 3;
		q[i] = s == 0 ? a->lo[i] : a->hi[i];
		if (s == 2)
			free[nfree++] = i;
	}
	if (!nfree) {
		memcpy(out[0], q, sizeof q);
		return 1;
	}
	int i = free[0];
	double px = 0.0, py = 0.0, before = 0.0;
	for (int k = 0; k < i; k++) {
		before += q[k];
		px += a->L[k] * cos(before);
		py += a->L[k] * sin(before);
	}
	double wx = tx - px, wy = ty - py;
	int toward = sqrt(wx * wx + wy * wy) > DEGENERATE_M;
	if (nfree == 1) {
		double vx, vy;
		chain(a, q, i, n, &vx, &vy);
		if (sqrt(vx * vx + vy * vy) <= DEGENERATE_M)
			return 0;
		q[i] = toward ? atan2(wy, wx) - atan2(vy, vx) - before : q0[i];
		memcpy(out[0], q, sizeof q);
		return 1;
	}
	if (nfree == 2) {
		int j = free[1];
		double ux, uy, vx, vy;
		chain(a, q, i, j, &ux, &uy);
		chain(a, q, j, n, &vx, &vy);
		double la = sqrt(ux * ux + uy * uy), lb = sqrt(vx * vx + vy * vy);
		if (la <= DEGENERATE_M || lb <= DEGENERATE_M)
			return 0;
		double alpha = atan2(uy, ux), beta = atan2(vy, vx), between = 0.0;
		for (int k = i + 1; k < j; k++)
			between += q[k];
		double shapes[6][2];
		int ns = analytic2(la, lb, wx, wy, shapes);
		double phi_w = toward ? atan2(wy, wx) : before + q0[i] + alpha;
		double lines[4][2] = { { phi_w, 0.0 }, { phi_w, M_PI }, { phi_w + M_PI, 0.0 }, { phi_w + M_PI, M_PI } };
		memcpy(shapes[ns], lines, sizeof lines);
		for (int k = 0; k < ns + 4; k++) {
			q[i] = shapes[k][0] - alpha - before;
			q[j] = shapes[k][1] + alpha - beta - between;
			memcpy(out[k], q, sizeof q);
		}
		*exact = ns;
		return ns + 4;
	}
	double phi_w = toward ? atan2(ty, tx) : q0[0];
	int count = 0;
	for (int k = 0; k < 2; k++)
		for (int s2 = 0; s2 < 2; s2++)
			for (int s3 = 0; s3 < 2; s3++) {
				out[count][0] = k ? phi_w + M_PI : phi_w;
				out[count][1] = s2 ? M_PI : 0.0;
				out[count][2] = s3 ? M_PI : 0.0;
				count++;
			}
	return count;
}

/* ik._turns: each angle at its turn nearest q0 inside the limits; 0 if one has none */
static int turns(const arm_t *a, const double *q, const double *q0, double pose[3])
{
	pose[0] = pose[1] = pose[2] = 0.0;
	for (int i = 0; i < a->n; i++)
		if (!nearest_turn(q[i], q0[i], a->lo[i], a->hi[i], &pose[i]))
			return 0;
	return 1;
}

/* ik.closest.closest_pose: the pose inside the limits whose tool point is closest to (tx, ty); returns the distance */
static double closest(const arm_t *a, double tx, double ty, const double *q0, double best[3])
{
	int n = a->n, faces = n == 3 ? 27 : 9;
	double best_d = INFINITY, best_near = INFINITY, cand[MAX_FACE][3], pose[3];
	memset(best, 0, 3 * sizeof *best);
	for (int f = 0; f < faces; f++) {
		int exact, count = face(a, f, tx, ty, q0, cand, &exact);
		for (int k = 0; k < count; k++) {
			if (!turns(a, cand[k], q0, pose))
				continue;
			double ang = 0.0, x = 0.0, y = 0.0;
			for (int i = 0; i < n; i++) {
				ang += pose[i];
				x += a->L[i] * cos(ang);
				y += a->L[i] * sin(ang);
			}
			double d = sqrt((tx - x) * (tx - x) + (ty - y) * (ty - y));
			double near = dist2(n, pose, q0);
			if (d < best_d - TIE_M || (d <= best_d + TIE_M && near < best_near)) {
				best_d = d;
				best_near = near;
				memcpy(best, pose, sizeof pose);
			}
		}
	}
	return best_d;
}

/* ik.closest.reachable3: 1 if a pose inside the limits of a 3-link arm reaches (gx, gy) (in the annulus): on a
 * face with one joint at a limit, or on a self-motion loop inside the limits whole */
static int reachable3(const arm_t *a, double gx, double gy, const double *q0)
{
	double cand[MAX_FACE][3], pose[3];
	for (int f = 0; f < 27; f++) {
		int twos = (f / 9 == 2) + ((f / 3) % 3 == 2) + (f % 3 == 2);
		if (twos != 2)
			continue;
		int exact;
		face(a, f, gx, gy, q0, cand, &exact);
		for (int k = 0; k < exact; k++)
			if (turns(a, cand[k], q0, pose))
				return 1;
	}
	double l1 = a->L[0], l2 = a->L[1], l3 = a->L[2];
	double r = sqrt(gx * gx + gy * gy), theta = atan2(gy, gx), ca, cb;
	if (r <= DEGENERATE_M) {
		int on = fabs(l1 - l2) <= l3 && l3 <= l1 + l2;
		ca = on ? -2.0 : 2.0;
		cb = on ? 2.0 : -2.0;
	} else {
		ca = (r * r + l3 * l3 - (l1 + l2) * (l1 + l2)) / (2.0 * l3 * r);
		cb = (r * r + l3 * l3 - (l1 - l2) * (l1 - l2)) / (2.0 * l3 * r);
	}
	double ph[2];
	int br[2] = { 0, 0 }, count;
	if (ca > 1.0 || cb < -1.0) {
		count = 0;
	} else if (cb >= 1.0 && ca <= -1.0) {
		ph[0] = ph[1] = theta;
		br[1] = 1;
		count = 2;
	} else if (cb >= 1.0) {
		ph[0] = theta;
		count = 1;
	} else if (ca <= -1.0) {
		ph[0] = theta + M_PI;
		count = 1;
	} else {
		double mid = 0.5 * (acos(cb) + acos(ca));
		ph[0] = theta + mid;
		ph[1] = theta - mid;
		count = 2;
	}
	for (int k = 0; k < count; k++) {
		double q[3];
		if (pose_at_phi(a, gx, gy, ph[k], br[k], q) && fit(a, q, q0, pose) == 0.0)
			return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* ik.solve's common case                                                    */

enum { GENERAL_PATH = 0, REACHED = 1, BLOCKED = 2 };

typedef struct {
	run_t run;
	long it, fk_evals, jac_evals, restarts;
	double max_step;
	double err, short_m; /* distance from the tool to the target; how far it is out of reach */
} solved_t;

/* the link vectors of the last start pose a batch used: rows from the same start share them */
typedef struct {
	int valid;
	double q[3], cs[6];
} start_t;

static int inside(const arm_t *a, const double *q)
{
	for (int i = 0; i < a->n; i++)
		if (!(a->lo[i] - 1e-9 <= q[i] && q[i] <= a->hi[i] + 1e-9))
			return 0;
	return 1;
}

#define SLIDE_MAX 50
#define SLIDE_STEP 0.3
#define SLIDE_HALVINGS 10
#define SLIDE_NEWTON 6
#define SLIDE_SKIP 1e-4
#define SLIDE_CONV 1e-8
#define SLIDE_TINY 1e-6
#define SLIDE_MARGIN (5.0 * (M_PI / 180.0))

/* ik._arm3: the link vectors of a 3-link arm at q */
static void arm3(const double *L, const double *q, double c[3], double s[3])
{
	double a2 = q[0] + q[1], a3 = a2 + q[2];
	c[0] = L[0] * cos(q[0]);
	c[1] = L[1] * cos(a2);
	c[2] = L[2] * cos(a3);
	s[0] = L[0] * sin(q[0]);
	s[1] = L[1] * sin(a2);
	s[2] = L[2] * sin(a3);
}

/* ik._self_motion: the unit tangent t of the self-motion and dt/ds from the link vectors; 0 if singular */
static int self_motion(const double c[3], const double s[3], double t[3], double dt[3])
{
	double j3x = -s[2], j3y = c[2];
	double j2x = j3x - s[1], j2y = j3y + c[1];
	double j1x = j2x - s[0], j1y = j2y + c[0];
	double u1 = j2x * j3y - j3x * j2y, u2 = j3x * j1y - j1x * j3y, u3 = j1x * j2y - j2x * j1y;
	double norm = sqrt(u1 * u1 + u2 * u2 + u3 * u3);
	if (!(norm > 1e-12))
		return 0;
	t[0] = u1 / norm;
	t[1] = u2 / norm;
	t[2] = u3 / norm;
	double T1 = t[0], T2 = T1 + t[1], T3 = T2 + t[2];
	double d3x = -(c[2] * T3), d3y = -(s[2] * T3);
	double d2x = d3x - c[1] * T2, d2y = d3y - s[1] * T2;
	double d1x = d2x - c[0] * T1, d1y = d2y - s[0] * T1;
	double du1 = (d2x * j3y - d3x * j2y) + (j2x * d3y - j3x * d2y);
	double du2 = (d3x * j1y - d1x * j3y) + (j3x * d1y - j1x * d3y);
	double du3 = (d1x * j2y - d2x * j1y) + (j1x * d2y - j2x * d1y);
	double td = t[0] * du1 + t[1] * du2 + t[2] * du3;
	dt[0] = (du1 - t[0] * td) / norm;
	dt[1] = (du2 - t[1] * td) / norm;
	dt[2] = (du3 - t[2] * td) / norm;
	return 1;
}

/* ik._onto_goal: Newton on the two joints other than k until the tool is within eps of (gx, gy); 1 and
 * q, c, s there, or 0; *evals fk evaluations, *steps Newton steps */
static int onto_goal(const double *L, double gx, double gy, double q[3], int k, double eps, long newton,
		     double c[3], double s[3], long *evals, long *steps)
{
	int i = k == 0 ? 1 : 0, j = k == 2 ? 1 : 2;
	double prev = INFINITY;
	for (long n = 0;; n++) {
		arm3(L, q, c, s);
		*evals = n + 1;
		*steps = n;
		double ex = gx - (c[0] + c[1] + c[2]);
		double ey = gy - (s[0] + s[1] + s[2]);
		double e = sqrt(ex * ex + ey * ey);
		if (e <= eps)
			return 1;
		if (!(e < 0.5 * prev) || n == newton)
			return 0;
		prev = e;
		double j3x = -s[2], j3y = c[2];
		double j2x = j3x - s[1], j2y = j3y + c[1];
		double jx[3] = { j2x - s[0], j2x, j3x }, jy[3] = { j2y + c[0], j2y, j3y };
		double a = jx[i], b = jx[j], cc = jy[i], dd = jy[j];
		double det = a * dd - b * cc;
		if (!(fabs(det) > 1e-300))
			return 0;
		q[i] += (dd * ex - b * ey) / det;
		q[j] += (a * ey - cc * ex) / det;
	}
}

/* ik.slide.slide_to_nearest: slide a 3-link pose on the goal along its self-motion to the nearest pose to q0 that keeps
 * SLIDE_MARGIN from every joint limit (the local minimum of |q - q0|^2 downhill from it) */
static void slide(const arm_t *a, double gx, double gy, const double *q0, double tol, long max_iter,
		  solved_t *out)
{
	long newton = max_iter < 0 ? 0 : max_iter < SLIDE_NEWTON ? max_iter : SLIDE_NEWTON;
	double eps = 1e-3 * tol;
	double *q = out->run.q;
	double lo[3], hi[3]; /* the limits less the margin (a joint already inside it keeps where it is) */
	for (int j = 0; j < 3; j++) {
		double m = fmin(SLIDE_MARGIN, 0.25 * (a->hi[j] - a->lo[j]));
		lo[j] = fmin(a->lo[j] + m, q[j]);
		hi[j] = fmax(a->hi[j] - m, q[j]);
	}
	double d = dist2(3, q, q0), *c = out->run.c, *s = out->run.s; /* (the link vectors at q, kept up to date) */
	out->fk_evals++;                                               /* (counted as in slide_to_nearest, which computes them) */
	for (int k = 0; k < SLIDE_MAX; k++) {
		double t[3], dt[3];
		if (!self_motion(c, s, t, dt))
			break;
		double w1 = q[0] - q0[0], w2 = q[1] - q0[1], w3 = q[2] - q0[2];
		double g = t[0] * w1 + t[1] * w2 + t[2] * w3;
		if (fabs(g) < SLIDE_CONV || (k == 0 && fabs(g) < SLIDE_SKIP))
			break; /* the nearest pose (the first time: to first order, and q stays as it is) */
		double kappa = sqrt(dt[0] * dt[0] + dt[1] * dt[1] + dt[2] * dt[2]);
		double step = kappa > 0.0 ? fmin(SLIDE_STEP, 1.0 / kappa) : SLIDE_STEP;
		double slope = 1.0 + (dt[0] * w1 + dt[1] * w2 + dt[2] * w3);
		double alpha = slope > 0.0 ? -g / slope : -copysign(step, g);
		alpha = clampd(alpha, -step, step);
		int moved = 0, pinned = 0, tries = 0;
		double h = 0.0;
		while (!moved && tries <= SLIDE_HALVINGS) {
			tries++;
			/* a step that takes a joint into the margin stops there, and that joint stays pinned */
			double frac = 1.0;
			int pin = -1;
			for (int m = 0; m < 3; m++) {
				double dq = alpha * t[m];
				double room = dq > 0.0 ? (hi[m] - q[m]) / dq : dq < 0.0 ? (lo[m] - q[m]) / dq : 1.0;
				if (room < frac) {
					frac = room;
					pin = m;
				}
			}
			h = frac * alpha;
			double r[3], rc[3], rs[3];
			for (int m = 0; m < 3; m++)
				r[m] = q[m] + h * t[m] + 0.5 * h * h * dt[m];
			int fixed = 0;
			if (pin >= 0) {
				fixed = pin;
				r[pin] = alpha * t[pin] < 0.0 ? lo[pin] : hi[pin];
			} else {
				if (fabs(t[1]) > fabs(t[fixed]))
					fixed = 1;
				if (fabs(t[2]) > fabs(t[fixed]))
					fixed = 2;
			}
			long evals, steps;
			int on = onto_goal(a->L, gx, gy, r, fixed, eps, newton, rc, rs, &evals, &steps);
			out->fk_evals += evals;
			out->it += steps;
			out->jac_evals += steps;
			if (on && lo[0] <= r[0] && r[0] <= hi[0] && lo[1] <= r[1] && r[1] <= hi[1] && lo[2] <= r[2] &&
			    r[2] <= hi[2]) {
				double dn = dist2(3, r, q0);
				/* (a step this short is kept whatever rounding does to the distance) */
				if (dn < d || fabs(h) < SLIDE_TINY) {
					memcpy(q, r, sizeof r);
					memcpy(c, rc, sizeof rc);
					memcpy(s, rs, sizeof rs);
					d = dn;
					moved = 1;
					pinned = pin >= 0;
					continue;
				}
			}
			alpha *= 0.5;
		}
		if (!moved || pinned || fabs(h) < 1e-10)
			break;
	}
}

/* 1 and the answer when a start reaches the target (or, out of reach, the closest point of the
 * reach annulus, as ik._project) within tol; 0: take the general path */
static int solve_point(const arm_t *a, double tx, double ty, const double *q0_in, double tol, long max_iter,
		       start_t *cache, solved_t *out)
{
	double q0[3], starts[1 + MAX_CAND][3]; /* q0 or the first closed-form start, then restarts */
	int n = a->n;
	if (!(isfinite(tx) && isfinite(ty)))
		return 0;
	for (int i = 0; i < n; i++) {
		if (!isfinite(q0_in[i]))
			return 0;
		q0[i] = clampd(q0_in[i], a->lo[i], a->hi[i]);
	}
	double r_max = a->L[0] + a->L[1] + (n == 3 ? a->L[2] : 0.0);
	double longest = fmax(a->L[0], a->L[1]);
	if (n == 3)
		longest = fmax(longest, a->L[2]);
	double r_min = fmax(0.0, 2.0 * longest - r_max);
	double r = hypot(tx, ty);
	double gx = tx, gy = ty, short_m = 0.0;
	if (r > r_max) {
		short_m = r - r_max;
		gx = tx * r_max / r;
		gy = ty * r_max / r;
	} else if (r < r_min) {
		if (r == 0.0) {
			short_m = r_min;
			gx = r_min;
			gy = 0.0;
		} else {
			short_m = r_min - r;
			gx = tx * r_min / r;
			gy = ty * r_min / r;
		}
	}
	if (short_m < 1e-12)
		short_m = 0.0; /* on the rim within rounding: reachable */
	double lam = 0.01 * (a->L[0] + a->L[1]);
	int tried = short_m > 0.0 || n == 2; /* closed-form starts first */
	int count, hit = 0, status = REACHED;
	if (tried) {
		count = candidates(a, gx, gy, q0, 1, 0, starts, NULL, NULL);
		if (count > 1)
			count = 1;
	} else {
		memcpy(starts[0], q0, sizeof q0);
		count = 1;
	}
	/* (not the whole struct: every start's run and the closest pose write all of out->run they use) */
	out->it = out->fk_evals = out->jac_evals = out->restarts = 0;
	out->max_step = 0.0;
	const double *cs0 = NULL;
	if (!tried && cache) { /* the first start is q0 */
		if (!cache->valid || memcmp(cache->q, q0, sizeof q0) != 0) {
			double c[3], s[3];
			arm3(a->L, q0, c, s);
			memcpy(cache->q, q0, sizeof q0);
			memcpy(cache->cs, c, sizeof c);
			memcpy(cache->cs + 3, s, sizeof s);
			cache->valid = 1;
		}
		cs0 = cache->cs;
	}
	for (int k = 0; k < count && !hit; k++) {
		dls(n, a->L, a->lo, a->hi, gx, gy, starts[k], tol, max_iter, lam, k == 0 ? cs0 : NULL, &out->run);
		out->it += out->run.it;
		out->fk_evals += out->run.fk_evals;
		out->jac_evals += out->run.jac_evals;
		if (out->run.max_step > out->max_step)
			out->max_step = out->run.max_step;
		out->restarts = k;
		hit = out->run.err <= tol && inside(a, out->run.q);
		if (!hit && !tried && k == 0) {
			/* stalled: restart from the closed-form poses nearest q0, else from the near misses */
			double misses[MAX_MISSES][3];
			int nmiss;
			tried = 1;
			int more = candidates(a, gx, gy, q0, 2, COARSE_ONLY, starts + 1, misses, &nmiss);
			if (!more && !reachable3(a, gx, gy, q0))
				break; /* no pose inside the limits reaches the goal: the closest pose below */
			if (more < 2)
				more = candidates(a, gx, gy, q0, 2, 1, starts + 1, misses, &nmiss);
			if (more) {
				count = 1 + (more > 2 ? 2 : more);
			} else {
				memcpy(starts + 1, misses, nmiss * sizeof misses[0]);
				count = 1 + nmiss;
			}
		}
	}
	if (!hit) {
		/* no start reached the goal: the pose inside the limits closest to the target, which reaches
		 * the goal when the searches missed a pose with a joint at a limit */
		double *q = out->run.q;
		closest(a, tx, ty, q0, q);
		double ang = 0.0, x = 0.0, y = 0.0;
		for (int i = 0; i < 3; i++) {
			ang += q[i];
			out->run.c[i] = i < n ? a->L[i] * cos(ang) : 0.0;
			out->run.s[i] = i < n ? a->L[i] * sin(ang) : 0.0;
			x += out->run.c[i];
			y += out->run.s[i];
		}
		out->run.err = sqrt((gx - x) * (gx - x) + (gy - y) * (gy - y));
		hit = out->run.err <= tol;
		if (!hit)
			status = BLOCKED;
	}
	if (hit && n == 3 && short_m == 0.0)
		slide(a, gx, gy, q0, tol, max_iter, out);
	/* the error to the target itself (ik.kernel.tool_xy, then hypot; the link vectors are those at q) */
	double x = out->run.c[0] + out->run.c[1], y = out->run.s[0] + out->run.s[1];
	if (n == 3) {
		x += out->run.c[2];
		y += out->run.s[2];
	}
	out->err = hypot(tx - x, ty - y);
	out->short_m = status == BLOCKED ? out->err : short_m;
	return status;
}

/* ------------------------------------------------------------------------ */
/* Python interface                                                          */

/* 2 or 3 floats from a sequence; returns the count, or -1 with an exception set */
static int floats(PyObject *seq, double *out, const char *what)
{
	/* a 1-d float64 array (numpy's) straight from its buffer: a sequence of numpy scalars is slow */
	if (!PyList_Check(seq) && !PyTuple_Check(seq) && PyObject_CheckBuffer(seq)) {
		Py_buffer view;
		if (PyObject_GetBuffer(seq, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0) {
			int plain = view.ndim == 1 && view.itemsize == 8 && view.format &&
				    (strcmp(view.format, "d") == 0 || strcmp(view.format, "=d") == 0) &&
				    view.len >= 16 && view.len <= 24;
			int len = (int)(view.len / 8);
			if (plain)
				memcpy(out, view.buf, view.len);
			PyBuffer_Release(&view);
			if (plain)
				return len;
		} else {
			PyErr_Clear();
		}
	}
	PyObject *fast = PySequence_Fast(seq, what);
	if (!fast)
		return -1;
	Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
	if (len < 2 || len > 3) {
		Py_DECREF(fast);
		PyErr_Format(PyExc_ValueError, "%s: need 2 or 3 values, got %zd", what, len);
		return -1;
	}
	for (Py_ssize_t i = 0; i < len; i++) {
		out[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
		if (out[i] == -1.0 && PyErr_Occurred()) {
			Py_DECREF(fast);
			return -1;
		}
	}
	Py_DECREF(fast);
	return (int)len;
}

/* links, lo, hi: the arm (all the same length n); returns n or -1 */
static int arm_from(PyObject *const *args, arm_t *a)
{
	a->n = floats(args[0], a->L, "links");
	if (a->n < 0 || floats(args[1], a->lo, "lo") != a->n || floats(args[2], a->hi, "hi") != a->n) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_ValueError, "links, lo and hi must have the same length");
		return -1;
	}
	return a->n;
}

/* a pose as a tuple of n floats */
static PyObject *q_tuple(int n, const double *q)
{
	return n == 3 ? Py_BuildValue("(ddd)", q[0], q[1], q[2]) : Py_BuildValue("(dd)", q[0], q[1]);
}

static PyObject *py_dls(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	arm_t a;
	double q0[3];
	if (nargs != 9) {
		PyErr_SetString(PyExc_TypeError, "dls(links, lo, hi, tx, ty, q0, tol, max_iter, lam)");
		return NULL;
	}
	int n = arm_from(args, &a);
	if (n < 0)
		return NULL;
	double tx = PyFloat_AsDouble(args[3]), ty = PyFloat_AsDouble(args[4]);
	if (floats(args[5], q0, "q0") != n) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_ValueError, "q0 must have one angle per link");
		return NULL;
	}
	double tol = PyFloat_AsDouble(args[6]);
	long max_iter = PyLong_AsLong(args[7]);
	double lam = PyFloat_AsDouble(args[8]);
	if (PyErr_Occurred())
		return NULL;
	run_t run;
	dls(n, a.L, a.lo, a.hi, tx, ty, q0, tol, max_iter, lam, NULL, &run);
	PyObject *q = q_tuple(n, run.q);
	if (!q)
		return NULL;
	return Py_BuildValue("(Ndllld)", q, run.err, run.it, run.fk_evals, run.jac_evals, run.max_step);
}

/* a writable or read-only C-contiguous float64 buffer of exactly `count` doubles */
static int dbuf(PyObject *obj, Py_buffer *view, Py_ssize_t count, int writable, const char *what)
{
	if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
		return -1;
	if (view->itemsize != 8 || !view->format || strcmp(view->format, "d") != 0 || view->len != count * 8) {
		PyErr_Format(PyExc_ValueError, "%s: need %zd contiguous float64 values", what, count);
		PyBuffer_Release(view);
		return -1;
	}
	return 0;
}

static PyObject *py_solve(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	arm_t a;
	double t[3], q0[3];
	if (nargs != 7) {
		PyErr_SetString(PyExc_TypeError, "solve(links, lo, hi, target, q0, tol, max_iter)");
		return NULL;
	}
	if (arm_from(args, &a) < 0)
		return NULL;
	/* anything unusual in the numbers: the general path says what is wrong */
	double tol = PyFloat_AsDouble(args[5]);
	long max_iter = PyLong_AsLong(args[6]);
	if (PyErr_Occurred() || floats(args[3], t, "target") != 2 || floats(args[4], q0, "q0") != a.n) {
		PyErr_Clear();
		Py_RETURN_NONE;
	}
	solved_t sol;
	int status = solve_point(&a, t[0], t[1], q0, tol, max_iter, NULL, &sol);
	if (status == GENERAL_PATH)
		Py_RETURN_NONE;
	PyObject *q = q_tuple(a.n, sol.run.q);
	if (!q)
		return NULL;
	return Py_BuildValue("(Ndllldldi)", q, sol.err, sol.it, sol.fk_evals, sol.jac_evals, sol.max_step,
			     sol.restarts, sol.short_m, status == BLOCKED);
}

static PyObject *py_solve_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	arm_t a;
	if (nargs != 9) {
		PyErr_SetString(PyExc_TypeError, "solve_rows(links, lo, hi, targets, q0s, q, out, tol, max_iter)");
		return NULL;
	}
	if (arm_from(args, &a) < 0)
		return NULL;
	double tol = PyFloat_AsDouble(args[7]);
	long max_iter = PyLong_AsLong(args[8]);
	if (PyErr_Occurred())
		return NULL;
	Py_buffer tb, q0b, qb, ob;
	if (PyObject_GetBuffer(args[3], &tb, PyBUF_C_CONTIGUOUS) < 0)
		return NULL;
	Py_ssize_t m = tb.len / 16;
	PyBuffer_Release(&tb);
	if (dbuf(args[3], &tb, 2 * m, 0, "targets") < 0)
		return NULL;
	if (dbuf(args[4], &q0b, a.n * m, 0, "q0s") < 0)
		goto fail_t;
	if (dbuf(args[5], &qb, a.n * m, 1, "q") < 0)
		goto fail_q0;
	if (dbuf(args[6], &ob, 4 * m, 1, "out") < 0)
		goto fail_q;
	const double *tp = tb.buf, *q0p = q0b.buf;
	double *qp = qb.buf, *op = ob.buf;
	start_t cache = { 0 };
	Py_BEGIN_ALLOW_THREADS
	for (Py_ssize_t i = 0; i < m; i++) {
		solved_t sol;
		int status = solve_point(&a, tp[2 * i], tp[2 * i + 1], q0p + a.n * i, tol, max_iter, &cache, &sol);
		int ok = status != GENERAL_PATH;
		for (int j = 0; j < a.n; j++)
			qp[a.n * i + j] = ok ? sol.run.q[j] : q0p[a.n * i + j];
		op[4 * i] = status;
		op[4 * i + 1] = ok ? sol.err : NAN;
		op[4 * i + 2] = ok ? (double)sol.it : 0.0;
		op[4 * i + 3] = ok ? sol.short_m : NAN;
	}
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&ob);
	PyBuffer_Release(&qb);
	PyBuffer_Release(&q0b);
	PyBuffer_Release(&tb);
	Py_RETURN_NONE;
fail_q:
	PyBuffer_Release(&qb);
fail_q0:
	PyBuffer_Release(&q0b);
fail_t:
	PyBuffer_Release(&tb);
	return NULL;
}

static PyMethodDef methods[] = {
	{ "dls", (PyCFunction)(void (*)(void))py_dls, METH_FASTCALL, "One adaptive DLS run (see armctl.ik)." },
	{ "solve", (PyCFunction)(void (*)(void))py_solve, METH_FASTCALL, "ik.solve's common case, or None." },
	{ "solve_rows", (PyCFunction)(void (*)(void))py_solve_rows, METH_FASTCALL, "solve per row, in place." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "_core", "The DLS IK kernel of armctl.ik, in C.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__core(void)
{
	return PyModule_Create(&module);
}
