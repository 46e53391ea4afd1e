//! What memory buys, as a picture: a sweep's hit rates against KV memory per replica (or
//! replicas), with the infinite-cache bound as a dashed line, drawn as SVG by `plotters`.
//! The full report prints the same points as a table ([`Curve`]).

use super::Row;
use plotters::prelude::*;

/// What a sweep's x axis is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// The KV cache's bytes per replica (the model's geometry is known): GB.
    Memory,
    /// The KV cache's tokens per replica: blocks × block size, thousands.
    Tokens,
    Replicas,
}

impl Axis {
    pub fn label(self) -> &'static str {
        match self {
            Axis::Memory => "KV cache per replica (GB)",
            Axis::Tokens => "KV cache per replica (thousand tokens)",
            Axis::Replicas => "replicas",
        }
    }
}

/// One point: a row's x and its hit rate.
#[derive(Debug, Clone)]
pub struct Point {
    pub label: String,
    pub x: f64,
    pub hit_rate: f64,
    pub kv_blocks: Option<usize>,
}

/// A sweep's curve, points in x order.
#[derive(Debug, Clone)]
pub struct Curve {
    pub axis: Axis,
    pub points: Vec<Point>,
    /// The infinite-cache hit rate, where known.
    pub bound: Option<f64>,
}

impl Curve {
    /// The curve of a sweep's rows: against replicas for a replicas sweep, else against the
    /// KV memory of one replica (bytes where every row knows them, else tokens).
    pub fn of(rows: &[Row], block_size: usize, replicas_swept: bool) -> Curve {
        let axis = if replicas_swept {
            Axis::Replicas
        } else if rows.iter().all(|r| r.setting.kv_cache_bytes.is_some()) {
            Axis::Memory
        } else {
            Axis::Tokens
        };
        let mut points: Vec<Point> = rows
            .iter()
            .map(|row| {
                let s = &row.setting;
                let x = match axis {
                    Axis::Replicas => s.replicas as f64,
                    Axis::Memory => s.kv_cache_bytes.unwrap_or(0) as f64 / 1e9,
                    Axis::Tokens => (s.kv_blocks.unwrap_or(0) * block_size) as f64 / 1e3,
                };
                Point {
                    label: s.label.clone(),
                    x,
                    hit_rate: row.summary.hit_rate,
                    kv_blocks: s.kv_blocks,
                }
            })
            .collect();
        points.sort_by(|a, b| a.x.total_cmp(&b.x));
        Curve {
            axis,
            points,
            bound: rows.first().and_then(|r| r.summary.infinite_cache_hit_rate),
        }
    }

    /// The x where the curve first reaches `fraction` of the bound (linear between two
    /// points), if it does.
    pub fn reaches(&self, fraction: f64) -> Option<f64> {
        let target = self.bound? * fraction;
        let mut before: Option<&Point> = None;
        for p in &self.points {
            if p.hit_rate >= target {
                return Some(match before {
                    Some(b) if p.hit_rate > b.hit_rate => {
                        b.x + (p.x - b.x) * (target - b.hit_rate) / (p.hit_rate - b.hit_rate)
                    }
                    _ => p.x,
                });
            }
            before = Some(p);
        }
        None
    }

    /// The curve as an SVG document.
    pub fn svg(&self, title: &str) -> Result<String, String> {
        let mut out = String::new();
        draw(self, title, &mut out).map_err(|e| e.to_string())?;
        Ok(out)
    }
}

fn draw(curve: &Curve, title: &str, out: &mut String) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::with_string(out, (760, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let x_max = curve
        .points
        .iter()
        .map(|p| p.x)
        .fold(0.0_f64, f64::max)
        .max(1e-9)
        * 1.05;
    let top = curve
        .points
        .iter()
        .map(|p| p.hit_rate)
        .chain(curve.bound)
        .fold(0.0_f64, f64::max);
    let y_max = ((top * 100.0 / 10.0).ceil() * 10.0 + 5.0).clamp(10.0, 100.0);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(18)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
    chart
        .configure_mesh()
        .max_light_lines(2)
        .x_desc(curve.axis.label())
        .y_desc("prompt tokens from cache (%)")
        .draw()?;
    let points: Vec<(f64, f64)> = curve
        .points
        .iter()
        .map(|p| (p.x, p.hit_rate * 100.0))
        .collect();
    chart
        .draw_series(LineSeries::new(points.clone(), BLUE.stroke_width(2)))?
        .label("hit rate (simulated)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLUE.stroke_width(2)));
    chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, BLUE.filled())))?;
    if let Some(bound) = curve.bound {
        let y = bound * 100.0;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, y), (x_max, y)],
                8,
                5,
                RED.stroke_width(2),
            ))?
            .label(format!("infinite cache ({:.1}%)", y))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], RED.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(points: &[(f64, f64)], bound: f64) -> Curve {
        Curve {
            axis: Axis::Memory,
            points: points
                .iter()
                .map(|&(x, hit_rate)| Point {
                    label: format!("x={x}"),
                    x,
                    hit_rate,
                    kv_blocks: None,
                })
                .collect(),
            bound: Some(bound),
        }
    }

    #[test]
    fn the_crossing_is_interpolated_between_two_points() {
        let c = curve(&[(10.0, 0.2), (20.0, 0.4), (40.0, 0.5)], 0.5);
        // 90% of 0.5 = 0.45: halfway from 20 to 40.
        assert!((c.reaches(0.9).unwrap() - 30.0).abs() < 1e-9);
        assert_eq!(c.reaches(0.2), Some(10.0));
        assert!(curve(&[(1.0, 0.1)], 0.5).reaches(0.9).is_none());
    }

    #[test]
    fn the_svg_has_the_curve_and_the_bound() {
        let svg = curve(&[(10.0, 0.2), (20.0, 0.4)], 0.5).svg("test").unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
        assert!(svg.contains("infinite cache (50.0%)"));
        assert!(svg.contains("<polyline"));
    }
}
