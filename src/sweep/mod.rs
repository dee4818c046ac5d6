//! `fedrun sweep`: expand a grid of `--grid key=v1,v2,…` into runs, run up to `--jobs` of them
//! at a time, each in its own deterministic folder, skip the ones already complete, and write
//! `sweep.csv` with one row per point.
//!
//! Each point runs as a child `fedrun` process with its share of the cores
//! (`RAYON_NUM_THREADS`), so points never share state and every run is what it would be alone.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::config::Spec;
use crate::data::recorded;
use crate::error::{Error, Result};
use crate::fl::engine::RunLock;
use crate::metrics::summary::{Status, Summary};

/// One `--grid key=v1,v2,...`.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub key: String,
    pub values: Vec<String>,
}

pub fn parse_axis(s: &str) -> Result<Axis> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| Error::Config(format!("--grid {s}: expected key=v1,v2,...")))?;
    let values: Vec<String> = v
        .split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect();
    if values.is_empty() {
        return Err(Error::Config(format!("--grid {s}: no values")));
    }
    Ok(Axis {
        key: k.trim().to_string(),
        values,
    })
}

/// One point of the grid: its (key, value) overrides in axis order.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub overrides: Vec<(String, String)>,
}

impl Point {
    /// The deterministic folder name: `<base>__<key>=<value>__…` with the keys' last parts and
    /// each value as [`label`] writes it (`wd=0.001` for `1e-3`, as `report` shows it).
    pub fn name(&self, base: &str) -> String {
        self.name_with(base, label)
    }

    /// The folder name of sweeps before the labels: each value as the grid wrote it (such a
    /// folder is resumed where it exists and the labelled one does not).
    pub fn typed_name(&self, base: &str) -> String {
        self.name_with(base, str::to_string)
    }

    fn name_with(&self, base: &str, value: impl Fn(&str) -> String) -> String {
        let mut s = base.to_string();
        for (k, v) in &self.overrides {
            let k = k.rsplit('.').next().unwrap_or(k);
            let v: String = value(v)
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "-+._".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            s.push_str(&format!("__{k}={v}"));
        }
        s
    }

    pub fn sets(&self) -> Vec<String> {
        self.overrides
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    }
}

/// A grid value as the analysis writes it ([`crate::analysis::runs::number`]): a float however
/// typed (`1e-3`, `0.0010`) as one text (`0.001`); integers, booleans and strings as typed.
pub fn label(v: &str) -> String {
    let t = v.trim();
    let float = t.contains(['.', 'e', 'E']) && !t.starts_with('"');
    match t.parse::<f64>() {
        Ok(f) if float => crate::analysis::runs::number(f),
        _ => v.to_string(),
    }
}

/// The cartesian product, the first axis varying slowest.
pub fn expand(axes: &[Axis]) -> Vec<Point> {
    let mut points = vec![Point {
        overrides: Vec::new(),
    }];
    for a in axes {
        let mut next = Vec::new();
        for p in &points {
            for v in &a.values {
                let mut q = p.clone();
                q.overrides.push((a.key.clone(), v.clone()));
                next.push(q);
            }
        }
        points = next;
    }
    points
}

#[derive(Clone)]
pub struct SweepOptions {
    pub config: Option<PathBuf>,
    pub set: Vec<String>,
    pub axes: Vec<Axis>,
    pub jobs: usize,
    pub out: PathBuf,
    pub data_dir: Option<PathBuf>,
    /// Stop launching points after the first diverged one.
    pub stop_on_divergence: bool,
    /// The fedrun binary to run points with.
    pub exe: PathBuf,
    /// Set by a signal to the sweep: no further point starts, and each running point gets
    /// SIGTERM and is waited for (it stops as a run does, interrupted and resumable).
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl SweepOptions {
    fn stopping(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst))
    }
}

/// A grid point ready to run: the point, its folder name, its `--set` overrides, its resolved
/// spec.
type Named = (Point, String, Vec<String>, Spec);

/// Every point of the grid, each validated (so a typo, or an axis key the run does not read,
/// fails before anything runs); two points that are the same run are refused. A common `--set`
/// goes to the points that read it (one config and `--set fedavgm.momentum=0.4` across
/// `--grid fl.algorithm=fedacg,fedavgm` is a legitimate study); one that no point reads is an
/// error, and one that only some read is said once.
fn named_points(base: &Spec, o: &SweepOptions) -> Result<Vec<Named>> {
    if let Some(a) = o.axes.iter().find(|a| a.key == "run.name") {
        return Err(Error::Config(format!(
            "--grid {}: run.name cannot be an axis: each point's folder is named from the spec's run.name and the point's values; set the base name with --set run.name=NAME",
            a.key
        )));
    }
    for set in &o.set {
        let key = set.split_once('=').map_or(set.as_str(), |(k, _)| k).trim();
        if let Some(a) = o.axes.iter().find(|a| a.key == key) {
            return Err(Error::Config(format!(
                "--set {set}: the grid varies `{}` (--grid {}=…), which would override it at every point; drop the --set or the axis",
                a.key, a.key
            )));
        }
    }
    let points = expand(&o.axes);
    // `extends` resolved as a single run and `check` resolve it
    let text = match &o.config {
        Some(c) => crate::config::extends::resolve(c)?,
        None => crate::config::QUICKSTART.to_string(),
    };
    let mut named = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    // per common `--set`: the points that leave it unread, and the first reason
    let mut skipped: Vec<(Vec<String>, String)> = vec![(Vec::new(), String::new()); o.set.len()];
    for p in &points {
        let name = match (p.name(&base.run.name), p.typed_name(&base.run.name)) {
            (new, old) if !o.out.join(&new).exists() && o.out.join(&old).exists() => old,
            (new, _) => new,
        };
        let mut sets =
            common_sets_read(&text, o, p, &name, &mut skipped).map_err(|e| as_grid(e, p))?;
        sets.extend(p.sets());
        sets.push(format!("run.name={name}"));
        let (mut spec, _) =
            crate::schema::parse_user(&text, "sweep point", &sets).map_err(|e| as_grid(e, p))?;
        let point = spec.clone();
        spec.run.name.clear();
        let resolved = spec.to_toml();
        if let Some((other, _)) = seen.iter().find(|(_, r)| *r == resolved) {
            return Err(Error::Config(format!(
                "sweep points `{other}` and `{name}` are the same run (an axis repeats a value, or sets a key to what it already is); remove the repeat"
            )));
        }
        seen.push((name.clone(), resolved));
        named.push((p.clone(), name, sets, point));
    }
    for (set, (names, why)) in o.set.iter().zip(&skipped) {
        if names.len() == points.len() {
            return Err(Error::Config(format!(
                "--set {set}: no point of the sweep reads it (it is not read {why})"
            )));
        }
        if !names.is_empty() {
            eprintln!(
                "[sweep] --set {set} applies to {} of {} points; not to {} (`{}`: not read {why})",
                points.len() - names.len(),
                points.len(),
                names.join(", "),
                names[0]
            );
        }
    }
    Ok(named)
}

/// An error about one of point `p`'s values, naming it as the `--grid` value it is (the spec's
/// parser sees every value as a `--set`).
fn as_grid(e: Error, p: &Point) -> Error {
    let Error::Config(m) = e else {
        return e;
    };
    for s in p.sets() {
        let from = format!("--set {s}");
        if m.contains(&from) {
            return Error::Config(m.replacen(&from, &format!("--grid {s}"), 1));
        }
    }
    Error::Config(m)
}

/// The common `--set`s that point `p` reads; each one it does not read is recorded in `skipped`.
fn common_sets_read(
    text: &str,
    o: &SweepOptions,
    p: &Point,
    name: &str,
    skipped: &mut [(Vec<String>, String)],
) -> Result<Vec<String>> {
    let mut all = o.set.clone();
    all.extend(p.sets());
    let spec = crate::schema::parse(text, "sweep point", &all)?;
    let unread = crate::schema::schema().unread(&spec);
    let mut sets = Vec::new();
    for (i, set) in o.set.iter().enumerate() {
        let key = set.split_once('=').map_or(set.as_str(), |(k, _)| k.trim());
        match unread.iter().find(|u| u.key == key) {
            Some(u) => {
                skipped[i].0.push(name.to_string());
                if skipped[i].1.is_empty() {
                    skipped[i].1 = u.why.clone();
                }
            }
            None => sets.push(set.clone()),
        }
    }
    Ok(sets)
}

/// Validate every point first, then run them.
pub fn run(base: &Spec, o: &SweepOptions) -> Result<Vec<(Point, String, Summary)>> {
    let named = named_points(base, o)?;
    std::fs::create_dir_all(&o.out)
        .map_err(|e| Error::io(format!("cannot create {}", o.out.display()), e))?;
    let jobs = o.jobs.max(1);
    let threads = (std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        / jobs)
        .max(1);
    let results: Mutex<Vec<Option<Summary>>> = Mutex::new(vec![None; named.len()]);
    let next = Mutex::new(0usize);
    let stop = Mutex::new(false);
    let pace = Pace::new(named.len(), jobs);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().unwrap();
                        if *n >= named.len() || *stop.lock().unwrap() || o.stopping() {
                            return;
                        }
                        *n += 1;
                        *n - 1
                    };
                    let (_, name, sets, spec) = &named[i];
                    let dir = o.out.join(name);
                    let summary = match Summary::read(&dir) {
                        Ok(s) if done_here(&s, &recorded(spec, o.data_dir.as_deref()), &dir) => {
                            eprintln!("[sweep] {name}: already complete, skipped");
                            s
                        }
                        // another process (a second sweep, a scheduler's job) is running it:
                        // its folder and `.log` are that process's
                        _ if RunLock::is_held(&dir) => {
                            eprintln!("[sweep] {name}: running in another process, skipped");
                            Summary {
                                status: Status::Running,
                                name: name.clone(),
                                message: "running in another process".into(),
                                ..Default::default()
                            }
                        }
                        _ => pace.ran(name, run_point(o, sets, threads, name, &dir)),
                    };
                    pace.ended();
                    if summary.status == Status::Diverged && o.stop_on_divergence {
                        *stop.lock().unwrap() = true;
                    }
                    results.lock().unwrap()[i] = Some(summary);
                }
            });
        }
    });
    let results = results.into_inner().unwrap();
    let out: Vec<(Point, String, Summary)> = named
        .into_iter()
        .zip(results)
        .map(|((p, n, _, _), s)| {
            (
                p,
                n.clone(),
                s.unwrap_or_else(|| Summary {
                    status: Status::NotRun,
                    name: n,
                    message: not_run_because(o),
                    ..Default::default()
                }),
            )
        })
        .collect();
    write_csv(&o.out.join("sweep.csv"), &o.axes, &out)?;
    Ok(out)
}

/// The sweep's pace, for the time left it prints as each point it runs ends.
struct Pace {
    /// (points ended, points that ran here rather than being skipped).
    counts: Mutex<(usize, usize)>,
    started: std::time::Instant,
    total: usize,
    jobs: usize,
}

impl Pace {
    fn new(total: usize, jobs: usize) -> Self {
        Pace {
            counts: Mutex::new((0, 0)),
            started: std::time::Instant::now(),
            total,
            jobs,
        }
    }

    /// Point `name` ran here and ended with `s`: say so, with the sweep's time left.
    fn ran(&self, name: &str, s: Summary) -> Summary {
        let mut c = self.counts.lock().unwrap();
        c.1 += 1;
        let left = self.total - c.0 - 1;
        // `jobs` points run at once, each at this pace
        let each = self.started.elapsed().as_secs_f64() / c.1 as f64;
        let eta = each * left as f64 / self.jobs as f64;
        eprintln!(
            "[sweep] {name}: {} ({} of {} points ended; about {} left)",
            s.status,
            c.0 + 1,
            self.total,
            crate::metrics::summary::readable_duration(eta)
        );
        s
    }

    fn ended(&self) {
        self.counts.lock().unwrap().0 += 1;
    }
}

/// The command that runs one point: the same arguments `run` gives its child processes, with
/// absolute paths, shell-quoted.
fn command_line(o: &SweepOptions, sets: &[String]) -> Result<String> {
    let abs = |p: &Path| -> Result<String> {
        Ok(std::path::absolute(p)
            .map_err(|e| Error::io(format!("cannot resolve {}", p.display()), e))?
            .display()
            .to_string())
    };
    let mut args = vec![abs(&o.exe)?, "--out".into(), abs(&o.out)?];
    if let Some(c) = &o.config {
        args.extend(["--config".into(), abs(c)?]);
    }
    if let Some(d) = &o.data_dir {
        args.extend(["--data-dir".into(), abs(d)?]);
    }
    for s in sets {
        args.extend(["--set".into(), s.clone()]);
    }
    shlex::try_join(args.iter().map(String::as_str))
        .map_err(|e| Error::Config(format!("cannot quote a sweep command: {e}")))
}

/// Each point's folder name and spec, in the grid's order (what `sweep --dry-run` times).
pub fn point_specs(base: &Spec, o: &SweepOptions) -> Result<Vec<(String, Spec)>> {
    Ok(named_points(base, o)?
        .into_iter()
        .map(|(_, name, _, spec)| (name, spec))
        .collect())
}

/// `--emit FILE`: validate every point and write one complete `fedrun` command per point, one
/// per line, for a scheduler (a Slurm job array, GNU parallel). Runs nothing. Each command
/// writes into the point's folder under `--out`, resumes it when run again, and a later
/// `fedrun sweep`, `report` or `plot` over the folder sees the points either way.
/// The commands set no thread count (`RAYON_NUM_THREADS`): where they run is the scheduler's
/// choice, and `scripts/slurm_array.sh` sets it from the task's cores. How many were written.
pub fn emit(base: &Spec, o: &SweepOptions, file: &Path) -> Result<usize> {
    let named = named_points(base, o)?;
    let mut text = String::new();
    for (_, _, sets, _) in &named {
        text.push_str(&command_line(o, sets)?);
        text.push('\n');
    }
    crate::io::write_atomic(file, text.as_bytes())?;
    Ok(named.len())
}

fn run_point(o: &SweepOptions, sets: &[String], threads: usize, name: &str, dir: &Path) -> Summary {
    let mut cmd = Command::new(&o.exe);
    // not `--quiet`: the point's progress lines go to its `.log`
    cmd.arg("--out")
        .arg(&o.out)
        .env("RAYON_NUM_THREADS", threads.to_string());
    if let Some(c) = &o.config {
        cmd.arg("--config").arg(c);
    }
    if let Some(d) = &o.data_dir {
        cmd.arg("--data-dir").arg(d);
    }
    for s in sets {
        cmd.arg("--set").arg(s);
    }
    eprintln!("[sweep] {name}: running");
    // `<name>.log` beside the folder (not `with_extension`: names hold dots, `wd=0.001`); the
    // point writes into it as it runs, after what earlier invocations wrote (a resumed point's
    // log keeps how it stopped)
    let log = o.out.join(format!("{name}.log"));
    let started = std::time::SystemTime::now();
    let before = std::fs::metadata(&log).map_or(0, |m| m.len());
    let kills = crate::fl::engine::memory_limit::oom_kills();
    let res = open_log(&log, started)
        .and_then(|f| Ok((f.try_clone()?, f)))
        .and_then(|(out, err)| cmd.stdout(out).stderr(err).spawn())
        .and_then(|mut child| wait_passing_stop(&mut child, o));
    let status = match res {
        Ok(status) => status,
        Err(e) => {
            let message = format!("cannot start {}: {e}", o.exe.display());
            return point_summary(name, Status::Failed, message);
        }
    };
    let written = std::fs::read(&log).unwrap_or_default();
    let error = error_line(written.get(before as usize..).unwrap_or_default());
    // the summary this process wrote (not one left by an earlier attempt)
    let written = std::fs::metadata(dir.join("summary.json"))
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= started);
    match (Summary::read(dir), status.success(), error) {
        // an outcome the point's process recorded itself: stopped (resumable) or diverged
        (Ok(s), _, _)
            if written && matches!(s.status, Status::Interrupted | Status::Diverged) =>
        {
            s
        }
        (_, false, _) if o.stopping() => point_summary(
            name,
            Status::Interrupted,
            "stopped by a signal to the sweep before its first round; run the sweep again to resume".into(),
        ),
        // killed outright (the out-of-memory killer, or a scheduler's kill): the process wrote
        // nothing of it, and an earlier attempt's summary is not this one's outcome
        _ if killed(&status) => {
            let after = crate::fl::engine::memory_limit::oom_kills();
            point_summary(name, Status::Failed, kill_message(kills, after, &log))
        }
        // a run that stopped with an error before or after its summary
        (_, false, Some(e)) => {
            point_summary(name, Status::Failed, format!("{e} (log: {})", log.display()))
        }
        (Ok(s), _, _) => s,
        (Err(_), _, _) => point_summary(
            name,
            Status::Failed,
            format!("exit status {status}; see {}", log.display()),
        ),
    }
}

/// Whether a point's process was killed by SIGKILL.
#[cfg(unix)]
fn killed(status: &std::process::ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal() == Some(libc::SIGKILL)
}

#[cfg(not(unix))]
fn killed(_: &std::process::ExitStatus) -> bool {
    false
}

/// What a point killed by SIGKILL is told: by the out-of-memory killer where the cgroup's count
/// of its kills rose from `before` to `after` while it ran, else what most often sends SIGKILL.
fn kill_message(before: Option<u64>, after: Option<u64>, log: &Path) -> String {
    let how = match (before, after) {
        (Some(b), Some(a)) if a > b => {
            "killed by the out-of-memory killer (SIGKILL; the cgroup's oom_kill count rose): the run needed more memory than the job's limit"
        }
        _ => {
            "killed by SIGKILL (exit 137), most often the out-of-memory killer at the job's memory limit, or a scheduler's kill"
        }
    };
    format!(
        "{how}; `fedrun check` estimates the run's peak: ask for more (Slurm's --mem) or lower local.batch_size, run.cohort or run.client_workers; run the sweep again to resume from the last checkpoint (log: {})",
        log.display()
    )
}

fn point_summary(name: &str, status: Status, message: String) -> Summary {
    Summary {
        status,
        name: name.to_string(),
        message,
        ..Default::default()
    }
}

/// Wait for a point's process to end; once the sweep is stopping (a signal), pass SIGTERM on to
/// it once, so that it stops as a run does (its round in flight discarded, its last checkpoint
/// kept), and go on waiting for it.
fn wait_passing_stop(
    child: &mut std::process::Child,
    o: &SweepOptions,
) -> std::io::Result<std::process::ExitStatus> {
    let mut passed = false;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if !passed && o.stopping() {
            terminate(child);
            passed = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// SIGTERM to `child` (a run's own stop); where there are no signals, the process is killed.
#[cfg(unix)]
fn terminate(child: &mut std::process::Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: a plain kill(2) of the child this sweep started and has not yet reaped
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}

#[cfg(not(unix))]
fn terminate(child: &mut std::process::Child) {
    let _ = child.kill();
}

/// Whether a point's folder holds its run, complete and whole: the summary is complete for the
/// rounds asked, the folder's `spec.toml` is the point's, and the files are those the run
/// ended with. Anything else runs the point's process, which extends the run, resumes it, or
/// refuses the folder with the reason (a complete point asked for another round count is
/// extended, or refused with the key named, never reported as if it had run the rounds asked).
fn done_here(s: &Summary, spec: &Spec, dir: &Path) -> bool {
    s.status == Status::Complete
        && s.rounds == spec.fl.rounds
        && std::fs::read_to_string(dir.join("spec.toml")).is_ok_and(|t| t == spec.to_toml())
        && s.mismatches(dir).is_empty()
}

/// The last `error: …` line a point's process printed.
/// `log` opened to append this invocation's output, after a line that says when it started.
fn open_log(log: &Path, started: std::time::SystemTime) -> std::io::Result<std::fs::File> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    let unix = started
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    writeln!(f, "[sweep] this point starts (unix time {unix})")?;
    Ok(f)
}

fn error_line(stderr: &[u8]) -> Option<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .rev()
        .find(|l| l.starts_with("error:"))
        .map(str::to_string)
}

/// `sweep.csv`'s columns after the grid's keys (the README defines each).
pub const COLUMNS: &str =
    "run,status,rounds,final_test_acc,best_test_acc,best_round,final_test_loss,elapsed_s";

fn write_csv(path: &Path, axes: &[Axis], rows: &[(Point, String, Summary)]) -> Result<()> {
    let mut s = String::new();
    for a in axes {
        s.push_str(&a.key);
        s.push(',');
    }
    s.push_str(COLUMNS);
    s.push('\n');
    let f = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for (p, name, sm) in rows {
        for (_, v) in &p.overrides {
            s.push_str(&label(v));
            s.push(',');
        }
        s.push_str(&format!(
            "{name},{},{},{},{},{},{},{:.1}\n",
            sm.status,
            sm.rounds,
            f(sm.final_test_acc),
            f(sm.best_test_acc),
            sm.best_round.map(|r| r.to_string()).unwrap_or_default(),
            f(sm.final_test_loss),
            sm.elapsed_s
        ));
    }
    crate::io::write_atomic(path, s.as_bytes())
}

/// Why a point was not run: the sweep stopped by a signal, or after a divergence
/// (`--stop-on-divergence`).
fn not_run_because(o: &SweepOptions) -> String {
    let signalled = (o.stop.as_ref()).is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst));
    match signalled {
        true => "the sweep was stopped by a signal before it started; run the same sweep to run it".into(),
        false => "the sweep stopped before it started (--stop-on-divergence: a point diverged); run the sweep without it to run it".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_is_the_product_with_deterministic_names() {
        let axes = vec![
            parse_axis("local.weight_decay=1e-4,1e-2").unwrap(),
            parse_axis("local.nar=false,true").unwrap(),
            parse_axis("run.seed=0,1,2").unwrap(),
        ];
        let pts = expand(&axes);
        assert_eq!(pts.len(), 12);
        assert_eq!(
            pts[0].name("cifar"),
            "cifar__weight_decay=0.0001__nar=false__seed=0"
        );
        assert_eq!(
            pts[11].name("cifar"),
            "cifar__weight_decay=0.01__nar=true__seed=2"
        );
        let mut names: Vec<String> = pts.iter().map(|p| p.name("x")).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 12);
        assert!(parse_axis("nokey").is_err());
    }
}
