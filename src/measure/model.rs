//! TTFT ≈ a + b × uncached tokens, fitted by ordinary least squares.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TtftModel {
    /// Fixed cost per request, in ms.
    pub a_ms: f64,
    /// Cost per uncached (computed) prompt token, in ms.
    pub b_ms_per_token: f64,
    /// Share of the TTFT variance the line explains.
    pub r2: f64,
    pub points: usize,
}

impl TtftModel {
    /// Fits `(uncached tokens, ttft ms)` points; `None` with fewer than two distinct x.
    pub fn fit(points: &[(f64, f64)]) -> Option<TtftModel> {
        let n = points.len() as f64;
        if points.len() < 2 {
            return None;
        }
        let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
        let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
        let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
        let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
        let syy: f64 = points.iter().map(|p| (p.1 - mean_y).powi(2)).sum();
        if sxx <= f64::EPSILON {
            return None;
        }
        let b = sxy / sxx;
        let a = mean_y - b * mean_x;
        let r2 = if syy <= f64::EPSILON {
            1.0
        } else {
            (sxy * sxy) / (sxx * syy)
        };
        Some(TtftModel {
            a_ms: a,
            b_ms_per_token: b,
            r2,
            points: points.len(),
        })
    }

    /// Predicted TTFT saved by caching `tokens` more prompt tokens.
    pub fn saving_ms(&self, tokens: usize) -> f64 {
        self.b_ms_per_token * tokens as f64
    }
}

impl std::fmt::Display for TtftModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TTFT ≈ {:.1} ms + {:.4} ms × uncached tokens (R² {:.3}, {} requests)",
            self.a_ms, self.b_ms_per_token, self.r2, self.points
        )
    }
}

/// The `p`-th percentile (0–100) by linear interpolation, like numpy's default.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let rank = (p / 100.0) * (sorted.len() - 1) as f64;
    let low = rank.floor() as usize;
    let high = rank.ceil() as usize;
    Some(sorted[low] + (sorted[high] - sorted[low]) * (rank - low as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_a_line() {
        let m = TtftModel::fit(&[(0.0, 10.0), (100.0, 60.0), (200.0, 110.0)]).unwrap();
        assert!((m.a_ms - 10.0).abs() < 1e-9);
        assert!((m.b_ms_per_token - 0.5).abs() < 1e-9);
        assert!((m.r2 - 1.0).abs() < 1e-9);
        assert!(TtftModel::fit(&[(5.0, 1.0), (5.0, 2.0)]).is_none());
    }

    #[test]
    fn percentiles() {
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 50.0), Some(2.0));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 50.0), Some(2.5));
        assert!(
            (percentile(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], 90.0).unwrap() - 9.1)
                .abs()
                < 1e-9
        );
        assert_eq!(percentile(&[], 50.0), None);
    }
}
