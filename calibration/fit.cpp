#include "calibration/fit.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <fmt/format.h>
#include <map>
#include <tuple>

namespace orrery::calibration {

namespace {

using Key = std::tuple<int, int, bool>;  // kind, dtype, causal

struct Point {
  std::vector<double> x;  // features
  double ln_t = 0;        // ln(seconds / multiplier)
};

// Index of v among the ascending distinct values `axis` (equal up to 1e-9 relative).
std::size_t axis_index(const std::vector<double>& axis, double v) {
  const auto it = std::lower_bound(axis.begin(), axis.end(), v * (1 - 1e-9));
  ORRERY_CHECK(it != axis.end() && std::abs(*it - v) <= 1e-9 * v, "feature value {} not on its axis", v);
  return static_cast<std::size_t>(it - axis.begin());
}

std::vector<double> distinct(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::vector<double> out;
  for (const double x : v) {
    if (out.empty() || x > out.back() * (1 + 1e-9)) out.push_back(x);
  }
  return out;
}

// Design row of the least-squares model: 1, ln x_i, (ln x_i)^2; columns of constant features
// (an axis of one value) or too few values for a square term are left out via `use`.
std::vector<double> design_row(const std::vector<double>& x, const std::vector<bool>& use) {
  const std::size_t dims = x.size();
  std::vector<double> row(1 + 2 * dims, 0.0);
  row[0] = 1;
  for (std::size_t i = 0; i < dims; ++i) {
    const double l = std::log(x[i]);
    if (use[1 + i]) row[1 + i] = l;
    if (use[1 + dims + i]) row[1 + dims + i] = l * l;
  }
  return row;
}

// Least squares min |X b - y| by Householder QR with column pivoting (Golub & Van Loan,
// Matrix Computations, 4th ed., algorithm 5.4.1): X (m x k, m >= 1) row-major. The rank counts
// the pivots above eps x min(m, k) x the largest; a rank-deficient X gets the basic solution
// (the coefficients of the columns left out of the rank are 0). With full column rank, the
// leverages h_r (the squared norms of the rows of the thin Q) give leave-one-out residuals.
struct LeastSquares {
  std::vector<double> beta;
  std::size_t rank = 0;
  std::vector<double> leverage;  // with full column rank
};

LeastSquares least_squares(std::vector<std::vector<double>> a, std::vector<double> y) {
  const std::size_t m = a.size(), k = a.front().size(), steps = std::min(m, k);
  std::vector<std::size_t> perm(k);
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  std::vector<std::vector<double>> reflectors;  // v_j over rows j..m-1, scaled so that H_j = I - v v^T
  for (std::size_t j = 0; j < steps; ++j) {
    // Pivot: the remaining column of largest norm below row j.
    std::size_t best = j;
    double best_norm = -1;
    for (std::size_t c = j; c < k; ++c) {
      double n = 0;
      for (std::size_t r = j; r < m; ++r) n += a[r][c] * a[r][c];
      if (n > best_norm) best_norm = n, best = c;
    }
    if (best != j) {
      for (std::size_t r = 0; r < m; ++r) std::swap(a[r][j], a[r][best]);
      std::swap(perm[j], perm[best]);
    }
    std::vector<double> v(m - j, 0.0);
    const double norm = std::sqrt(best_norm);
    if (norm > 0) {
      const double alpha = a[j][j] > 0 ? -norm : norm;
      for (std::size_t r = j; r < m; ++r) v[r - j] = a[r][j];
      v[0] -= alpha;
      double vv = 0;
      for (const double e : v) vv += e * e;
      const double scale = vv > 0 ? std::sqrt(2 / vv) : 0;
      for (double& e : v) e *= scale;
      const auto reflect = [&](auto&& at) {  // x -= v (v . x) over rows j..m-1
        double dot = 0;
        for (std::size_t r = j; r < m; ++r) dot += v[r - j] * at(r);
        for (std::size_t r = j; r < m; ++r) at(r) -= v[r - j] * dot;
      };
      for (std::size_t c = j; c < k; ++c) reflect([&](std::size_t r) -> double& { return a[r][c]; });
      reflect([&](std::size_t r) -> double& { return y[r]; });
    }
    reflectors.push_back(std::move(v));
  }
  LeastSquares out;
  const double largest = steps > 0 ? std::abs(a[0][0]) : 0;
  const double threshold = std::numeric_limits<double>::epsilon() * static_cast<double>(steps) * largest;
  while (out.rank < steps && std::abs(a[out.rank][out.rank]) > threshold) ++out.rank;
  // Back substitution on the leading rank x rank block of R.
  std::vector<double> z(k, 0.0);
  for (std::size_t i = out.rank; i-- > 0;) {
    double t = y[i];
    for (std::size_t c = i + 1; c < out.rank; ++c) t -= a[i][c] * z[c];
    z[i] = t / a[i][i];
  }
  out.beta.assign(k, 0.0);
  for (std::size_t i = 0; i < k; ++i) out.beta[perm[i]] = z[i];
  if (out.rank == k) {
    // Thin Q = H_0 ... H_{k-1} [I_k; 0], applied right to left.
    std::vector<std::vector<double>> q(m, std::vector<double>(k, 0.0));
    for (std::size_t i = 0; i < k; ++i) q[i][i] = 1;
    for (std::size_t j = steps; j-- > 0;) {
      const std::vector<double>& v = reflectors[j];
      for (std::size_t c = 0; c < k; ++c) {
        double dot = 0;
        for (std::size_t r = j; r < m; ++r) dot += v[r - j] * q[r][c];
        for (std::size_t r = j; r < m; ++r) q[r][c] -= v[r - j] * dot;
      }
    }
    out.leverage.assign(m, 0.0);
    for (std::size_t r = 0; r < m; ++r) {
      for (std::size_t c = 0; c < k; ++c) out.leverage[r] += q[r][c] * q[r][c];
    }
  }
  return out;
}

void fit_curve(models::CostCurve& curve, const std::vector<Point>& points) {
  const std::size_t dims = points.front().x.size();
  for (std::size_t i = 0; i < dims; ++i) {
    std::vector<double> values;
    for (const Point& p : points) values.push_back(p.x[i]);
    curve.axes.push_back(distinct(std::move(values)));
  }
  const std::size_t cells = curve.cells();
  std::vector<std::size_t> stride(dims);
  std::size_t s = 1;
  for (std::size_t i = dims; i-- > 0;) {
    stride[i] = s;
    s *= curve.axes[i].size();
  }
  // Cell values: the geometric mean of the points measured there.
  std::vector<double> sum(cells, 0.0);
  std::vector<int> n(cells, 0);
  for (const Point& p : points) {
    std::size_t c = 0;
    for (std::size_t i = 0; i < dims; ++i) c += axis_index(curve.axes[i], p.x[i]) * stride[i];
    sum[c] += p.ln_t;
    ++n[c];
  }
  std::vector<std::size_t> measured;
  std::vector<std::vector<double>> cell_x(cells, std::vector<double>(dims));
  for (std::size_t c = 0; c < cells; ++c) {
    for (std::size_t i = 0; i < dims; ++i) cell_x[c][i] = curve.axes[i][(c / stride[i]) % curve.axes[i].size()];
    if (n[c] > 0) measured.push_back(c);
  }
  curve.points = points.size();

  // Least squares over the measured cells; terms are dropped until there are more cells than
  // unknowns (square terms first, then linear ones), so that leave-one-out is defined.
  std::vector<bool> use(1 + 2 * dims, false);
  use[0] = true;
  std::size_t unknowns = 1;
  for (std::size_t i = 0; i < dims; ++i) {
    if (curve.axes[i].size() >= 2 && unknowns + 1 < measured.size()) use[1 + i] = true, ++unknowns;
  }
  for (std::size_t i = 0; i < dims; ++i) {
    if (curve.axes[i].size() >= 3 && unknowns + 1 < measured.size()) use[1 + dims + i] = true, ++unknowns;
  }
  std::vector<std::size_t> columns;
  for (std::size_t j = 0; j < use.size(); ++j) {
    if (use[j]) columns.push_back(j);
  }
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  for (const std::size_t c : measured) {
    const std::vector<double> full = design_row(cell_x[c], use);
    std::vector<double>& row = X.emplace_back();
    for (const std::size_t j : columns) row.push_back(full[j]);
    y.push_back(sum[c] / n[c]);
  }
  const LeastSquares ls = least_squares(X, y);
  curve.fit_coefficients.assign(1 + 2 * dims, 0.0);
  for (std::size_t j = 0; j < columns.size(); ++j) curve.fit_coefficients[columns[j]] = ls.beta[j];
  const auto predict = [&](const std::vector<double>& x) {
    const std::vector<double> row = design_row(x, use);
    double v = 0;
    for (std::size_t j = 0; j < curve.fit_coefficients.size(); ++j) v += row[j] * curve.fit_coefficients[j];
    return v;
  };
  // Leave-one-out of the fit in closed form: the residual over (1 - leverage).
  if (X.size() > columns.size() && ls.rank == columns.size()) {
    double err = 0;
    int counted = 0;
    for (std::size_t r = 0; r < X.size(); ++r) {
      const double h = ls.leverage[r];
      if (h > 1 - 1e-9) continue;
      double fitted = 0;
      for (std::size_t j = 0; j < columns.size(); ++j) fitted += X[r][j] * ls.beta[j];
      err += std::abs(std::exp(-(y[r] - fitted) / (1 - h)) - 1);
      ++counted;
    }
    if (counted > 0) curve.loo_fit_mape = err / counted;
  }

  // The grid: measured cells, holes from the fit, then the monotone repair.
  curve.log_seconds.assign(cells, 0.0);
  for (std::size_t c = 0; c < cells; ++c) {
    if (n[c] > 0) {
      curve.log_seconds[c] = sum[c] / n[c];
    } else {
      curve.log_seconds[c] = predict(cell_x[c]);
      ++curve.filled;
    }
  }
  std::vector<bool> raised(cells, false);
  for (std::size_t i = 0; i < dims; ++i) {
    const std::size_t len = curve.axes[i].size();
    for (std::size_t c = 0; c < cells; ++c) {
      const std::size_t j = (c / stride[i]) % len;
      if (j == 0) continue;
      const double before = curve.log_seconds[c - stride[i]];
      if (curve.log_seconds[c] < before) {
        curve.log_seconds[c] = before;
        raised[c] = true;
      }
    }
  }
  curve.repaired = static_cast<std::size_t>(std::count(raised.begin(), raised.end(), true));

  // Leave-one-out of the interpolant: each measured cell with neighbours on both sides along
  // some axis, predicted from them in log space (mean over such axes).
  double err = 0;
  int counted = 0;
  for (const std::size_t c : measured) {
    double pred = 0;
    int axes_used = 0;
    for (std::size_t i = 0; i < dims; ++i) {
      const std::size_t len = curve.axes[i].size();
      const std::size_t j = (c / stride[i]) % len;
      if (j == 0 || j + 1 >= len) continue;
      const std::vector<double>& a = curve.axes[i];
      const double w = (std::log(a[j]) - std::log(a[j - 1])) / (std::log(a[j + 1]) - std::log(a[j - 1]));
      pred += curve.log_seconds[c - stride[i]] * (1 - w) + curve.log_seconds[c + stride[i]] * w;
      ++axes_used;
    }
    if (axes_used == 0) continue;
    err += std::abs(std::exp(pred / axes_used - sum[c] / n[c]) - 1);
    ++counted;
  }
  if (counted > 0) curve.loo_interpolation_mape = err / counted;
}

}  // namespace

models::CostCurves fit_profile(const Profile& profile, const std::string& source) {
  std::map<Key, std::vector<Point>> groups;
  for (const Measurement& m : profile.points) {
    const models::Kernel& k = m.kernel;
    const bool attention = k.kind == models::KernelKind::attention_fwd || k.kind == models::KernelKind::attention_bwd;
    const Key key{static_cast<int>(k.kind), static_cast<int>(k.dtype), attention && k.causal};
    Point p{models::kernel_features(k), std::log(m.median_s / models::feature_multiplier(k))};
    groups[key].push_back(std::move(p));
  }
  models::CostCurves out;
  out.device = profile.device;
  out.source = source;
  out.metadata.emplace_back("harness", profile.harness);
  out.metadata.emplace_back("date", profile.date);
  for (const auto& [k, v] : profile.identity) out.metadata.emplace_back("identity." + k, v);
  for (const auto& [k, v] : profile.software) out.metadata.emplace_back("software." + k, v);
  for (const auto& [k, v] : profile.clocks) out.metadata.emplace_back("clocks." + k, v);
  for (const auto& [key, points] : groups) {
    models::CostCurve curve;
    curve.kind = static_cast<models::KernelKind>(std::get<0>(key));
    curve.dtype = static_cast<models::DType>(std::get<1>(key));
    curve.causal = std::get<2>(key);
    fit_curve(curve, points);
    out.curves.push_back(std::move(curve));
  }
  return out;
}

std::string fit_report(const models::CostCurves& curves) {
  const auto pct = [](double v) { return std::isfinite(v) ? fmt::format("{:.1f}%", 100 * v) : std::string("-"); };
  std::string out = fmt::format("{:<22} {:<5} {:>6} {:>6} {:>7} {:>8} {:>14} {:>10}\n", "curve", "dtype", "points", "cells",
                                "filled", "repaired", "loo interp", "loo fit");
  for (const models::CostCurve& c : curves.curves) {
    std::string name(models::to_string(c.kind));
    if (c.causal) name += " (causal)";
    out += fmt::format("{:<22} {:<5} {:>6} {:>6} {:>7} {:>8} {:>14} {:>10}\n", name, models::to_string(c.dtype), c.points,
                       c.cells(), c.filled, c.repaired, pct(c.loo_interpolation_mape), pct(c.loo_fit_mape));
  }
  return out;
}

}  // namespace orrery::calibration
