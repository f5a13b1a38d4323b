//! `dnplot`: latency and bandwidth curves from `dnbench --json` output, as
//! one SVG with two panels (log-log latency, log-x bandwidth), one line per
//! input. Used by `scripts/plot-whatif.sh` for docs/BENCHMARKS.md.
//!
//! ```text
//! dnplot --out curves.svg --title "..." LABEL=latency.json:bw.json ...
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use plotters::prelude::*;

/// Plot dnbench curves into an SVG.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The SVG to write.
    #[arg(long)]
    out: PathBuf,
    /// Title above the panels.
    #[arg(long, default_value = "")]
    title: String,
    /// `LABEL=LATENCY.json:BANDWIDTH.json`, one per curve (dnbench --json arrays).
    #[arg(required = true)]
    series: Vec<String>,
}

/// One curve: its label and (size, value) points.
struct Series {
    label: String,
    latency: Vec<(f64, f64)>,
    bandwidth: Vec<(f64, f64)>,
}

fn points(path: &str, key: &str) -> Result<Vec<(f64, f64)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let json =
        text.find('[').map(|i| &text[i..]).ok_or_else(|| format!("{path}: no JSON array (use dnbench --json)"))?;
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(json.trim()).map_err(|e| format!("{path}: not a dnbench JSON array: {e}"))?;
    let mut out = Vec::new();
    for r in rows {
        let (Some(size), Some(v)) = (r["size"].as_f64(), r[key].as_f64()) else {
            return Err(format!("{path}: a row without \"size\" and \"{key}\": {r}"));
        };
        // Log axes: 0 B is drawn at 1 B.
        out.push((size.max(1.0), v));
    }
    if out.is_empty() {
        return Err(format!("{path}: no rows"));
    }
    Ok(out)
}

fn parse(spec: &str) -> Result<Series, String> {
    let (label, files) = spec.split_once('=').ok_or_else(|| format!("{spec:?} is not LABEL=LAT.json:BW.json"))?;
    let (lat, bw) = files.split_once(':').ok_or_else(|| format!("{spec:?} is not LABEL=LAT.json:BW.json"))?;
    Ok(Series { label: label.into(), latency: points(lat, "latency_us")?, bandwidth: points(bw, "MBps")? })
}

fn range(all: impl Iterator<Item = f64>) -> (f64, f64) {
    all.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

fn draw(args: &Args, series: &[Series]) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(&args.out, (1100, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(&args.title, ("sans-serif", 18))?;
    let (left, right) = root.split_horizontally(550);
    let colors = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];
    let sizes = range(series.iter().flat_map(|s| s.latency.iter().chain(&s.bandwidth).map(|p| p.0)));
    let lat = range(series.iter().flat_map(|s| s.latency.iter().map(|p| p.1)));
    let bw = range(series.iter().flat_map(|s| s.bandwidth.iter().map(|p| p.1)));

    let mut c = ChartBuilder::on(&left)
        .caption("latency (us, half round trip)", ("sans-serif", 15))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d((sizes.0..sizes.1 * 1.5).log_scale(), (lat.0 * 0.8..lat.1 * 1.25).log_scale())?;
    c.configure_mesh().x_desc("message size (bytes)").y_desc("us").draw()?;
    for (i, s) in series.iter().enumerate() {
        let color = colors[i % colors.len()];
        c.draw_series(LineSeries::new(s.latency.iter().copied(), color.stroke_width(2)))?
            .label(s.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    c.configure_series_labels().position(SeriesLabelPosition::UpperLeft).border_style(BLACK).draw()?;

    let mut c = ChartBuilder::on(&right)
        .caption("bandwidth (MB/s, windows of 64)", ("sans-serif", 15))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d((sizes.0..sizes.1 * 1.5).log_scale(), 0.0..bw.1 * 1.1)?;
    c.configure_mesh().x_desc("message size (bytes)").y_desc("MB/s").draw()?;
    for (i, s) in series.iter().enumerate() {
        let color = colors[i % colors.len()];
        c.draw_series(LineSeries::new(s.bandwidth.iter().copied(), color.stroke_width(2)))?
            .label(s.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    c.configure_series_labels().position(SeriesLabelPosition::UpperLeft).border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let series: Result<Vec<Series>, String> = args.series.iter().map(|s| parse(s)).collect();
    let series = match series {
        Ok(s) => s,
        Err(e) => {
            eprintln!("dnplot: {e}");
            return ExitCode::from(2);
        }
    };
    match draw(&args, &series) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dnplot: cannot draw {}: {e}", args.out.display());
            ExitCode::FAILURE
        }
    }
}
