//! `latlab probe calibrate -o FILE`: a machine file for this machine (crates/latlab-probe's
//! `calibrate`), checked by the experiment loader before it is put in place.
use clap::Args;
use latlab_probe::calibrate;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// The machine file to write (refused if it exists, unless --force).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Fewer and shorter runs (seconds instead of about a minute); spreads are wider.
    #[arg(long)]
    pub quick: bool,
    /// Directory for the disk measurements' files, in a private directory made there
    /// (default: the system temp dir); its disk is the one measured.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

/// The machine file's text parsed and checked as `latlab run` reads a machine file by path.
pub fn check(path: &Path, text: &str) -> Result<latlab_sim::MachineProfile, latlab_exp::ExpError> {
    let name = path.display().to_string();
    let files = |_: &str| Ok((name.clone(), text.to_string()));
    latlab_exp::machine("latlab probe calibrate", "./calibrated.toml", 0, &files)
}

/// Put `text` at `path`: written whole to a new file beside it (O_EXCL|O_NOFOLLOW), then
/// renamed over it (`force`) or hard-linked to it, which fails if `path` exists by then.
fn install(path: &Path, text: &str, force: bool) -> anyhow::Result<()> {
    let (tmp, mut f) = latlab_probe::private::create_beside(path)
        .map_err(|e| anyhow::anyhow!("-o {}: cannot create a file beside it: {e}", path.display()))?;
    let placed = f
        .write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .and_then(|()| match force {
            true => std::fs::rename(&tmp, path),
            false => std::fs::hard_link(&tmp, path),
        });
    let _ = std::fs::remove_file(&tmp);
    placed.map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            anyhow::anyhow!("-o {}: exists (--force replaces it)", path.display())
        }
        _ => anyhow::anyhow!("-o {}: {e}", path.display()),
    })
}

pub fn run(a: &CalibrateArgs) -> anyhow::Result<ExitCode> {
    if !a.force && std::fs::symlink_metadata(&a.output).is_ok() {
        anyhow::bail!("-o {}: exists (--force replaces it)", a.output.display());
    }
    let parent = match a.output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        anyhow::bail!("-o {}: {} is not a directory", a.output.display(), parent.display());
    }
    let dir = a.dir.clone().unwrap_or_else(std::env::temp_dir);
    if !dir.is_dir() {
        anyhow::bail!("--dir {}: not a directory", dir.display());
    }
    let opts = calibrate::Options {
        quick: a.quick,
        dir,
        max_cpus: latlab_sim::machine::MAX_CPUS,
    };
    let cal = match calibrate::run(&opts, &mut |step| errln!("latlab probe calibrate: {step}")) {
        Ok(c) => c,
        Err(e) => match latlab_probe::signals::stopped_by() {
            Some(sig) => {
                errln!("latlab probe calibrate: {e}");
                return Ok(ExitCode::from((128 + sig) as u8));
            }
            None => anyhow::bail!("latlab probe calibrate: {e}"),
        },
    };
    let text = cal.toml();
    // The loader must take what is written: a failure here is latlab's bug, said as such.
    check(&a.output, &text).map_err(|e| {
        anyhow::anyhow!("the calibrated machine file does not load (a bug in latlab probe calibrate): {e}")
    })?;
    install(&a.output, &text, a.force)?;
    outln!("{}", cal.summary())?;
    outln!(
        "wrote {} in {:.1} s; use it as machine = \"{}\" in an experiment file",
        a.output.display(),
        cal.wall_s,
        a.output.display()
    )?;
    Ok(ExitCode::SUCCESS)
}
