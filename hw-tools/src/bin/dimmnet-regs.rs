//! `dimmnet-regs`: print the DIMMnet-2 register map as a C header, JSON or a
//! Markdown spec page.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use fpga_regs::export::{render, Format};

/// The output formats, as command-line values.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Fmt {
    /// A C header (`gcc -fsyntax-only` clean).
    C,
    /// A JSON document.
    Json,
    /// A Markdown spec page.
    Md,
}

impl From<Fmt> for Format {
    fn from(f: Fmt) -> Format {
        match f {
            Fmt::C => Format::C,
            Fmt::Json => Format::Json,
            Fmt::Md => Format::Md,
        }
    }
}

/// Print the DIMMnet-2 register map.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value = "md")]
    format: Fmt,
    /// Write to this file instead of standard output.
    #[arg(long, short)]
    output: Option<std::path::PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let text = render(&fpga_regs::spec::spec(), args.format.into());
    let result = match &args.output {
        Some(path) => std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display())),
        None => std::io::stdout().write_all(text.as_bytes()).map_err(|e| format!("cannot write to stdout: {e}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("dimmnet-regs: {msg}");
            ExitCode::FAILURE
        }
    }
}
