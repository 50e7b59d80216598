//! `latlab report html`: one self-contained HTML page from saved results, to open in a
//! browser or attach to a bug report. Inline CSS only: no script, font, stylesheet or
//! network fetch. It holds, in order:
//!
//! - per run, a header: engine, machine, kernel, workload, what became of each load (a probe
//!   run's), seed, duration, version, and the settings in a collapsible `<details>`;
//! - the comparison [`crate::compare`] computes (count, min, percentiles, max, missed, ratios
//!   to the first run, the log-bucket histogram) as HTML tables, per compared stream;
//! - the distribution and percentile plots ([`crate::plot`]) as inline SVG;
//! - per run, its worst samples with their attribution (in [`crate::summary`]'s words) and,
//!   when the run has one, its `/proc/latency_trace` ([`crate::latency_trace`]) in a `<pre>`.
//!
//! `latlab validate --html` ([`render_validate`]) writes the same sections once per scenario
//! (the model's run beside the machine's), after its verdict table.
//!
//! Every text taken from a result (task names, paths, settings, labels) is HTML-escaped.

use crate::{compare, input, latency_trace, plot, summary};
use latlab_core::{ms, RunResult, Sample};
use std::fmt::Write;

/// `s` with `&`, `<`, `>`, `"` and `'` escaped, for element text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em auto;max-width:1100px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
h3{font-size:1.1em}h4{font-size:1em;margin:1em 0 .3em}
table{border-collapse:collapse;margin:.4em 0 1em}
th,td{border:1px solid #ccc;padding:.15em .6em;vertical-align:top}
thead th{background:#f0f0f0}tbody th{text-align:left;font-weight:normal;background:#fafafa}
table.num td{text-align:right;font-variant-numeric:tabular-nums}
table.kv td{text-align:left}table.kv th{white-space:nowrap}
.note{color:#a05a00}
figure{margin:1em 0}figure svg{max-width:100%;height:auto;border:1px solid #eee}
pre{background:#f7f7f7;border:1px solid #ddd;padding:.5em;overflow-x:auto;font-size:.85em}
details{margin:.3em 0 1em}summary{cursor:pointer}
footer{margin-top:2em;color:#777;font-size:.85em}
table.verdicts td.inside{background:#e3f3e6}table.verdicts td.outside{background:#fbe0e0;font-weight:bold}
table.verdicts td.noise{color:#777;font-style:italic}table.verdicts tbody{border-top:2px solid #999}
p.pass,p.fail{padding:.5em .8em;border-radius:4px}p.pass{background:#e3f3e6}p.fail{background:#fbe0e0}";

/// A table from rows of cells: the first row is the header, every other row starts with
/// its name (a row header).
fn table(class: &str, rows: &[Vec<String>]) -> String {
    let mut out = format!("<table class=\"{class}\">\n");
    if let Some((head, body)) = rows.split_first() {
        out.push_str("<thead><tr>");
        for c in head {
            let _ = write!(out, "<th>{}</th>", escape(c));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for r in body {
            out.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let tag = if i == 0 { "th" } else { "td" };
                let _ = write!(out, "<{tag}>{}</{tag}>", escape(c));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n");
    }
    out.push_str("</table>\n");
    out
}

/// A two-column table of (name, value) rows, without a header.
fn kv_table(rows: &[(String, String)]) -> String {
    let mut out = String::from("<table class=\"kv\">\n<tbody>\n");
    for (k, v) in rows {
        let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// A run's header: what ran, where, how long, and its settings (collapsed); its heading
/// at level `h`, its element id `{id}run-N`.
fn run_header(i: usize, label: &str, r: &RunResult, h: u8, id: &str) -> String {
    let m = &r.meta;
    let first = if i == 0 { " (first: ratios are to it)" } else { "" };
    let mut out = format!(
        "<section class=\"run\" id=\"{id}run-{}\">\n<h{h}>run {}: {}{first}</h{h}>\n",
        i + 1,
        i + 1,
        escape(label)
    );
    let mut rows = vec![
        ("engine".into(), input::engine_name(m.engine).into()),
        ("machine".into(), m.machine.clone()),
        ("kernel".into(), m.kernel.clone()),
        ("workload".into(), m.workload.clone()),
    ];
    rows.extend(
        r.loads
            .iter()
            .map(|f| (format!("load {}", f.name), summary::load_fate(f))),
    );
    rows.extend([
        ("seed".into(), m.seed.to_string()),
        ("duration".into(), format!("{:.3} s", m.duration_ns as f64 / 1e9)),
        ("version".into(), m.version.clone()),
    ]);
    let system = m.system();
    rows.extend(system.iter().map(|(k, v)| (k.replace('_', " "), v.to_string())));
    out.push_str(&kv_table(&rows));
    let settings: Vec<(String, String)> = m
        .settings
        .iter()
        .filter(|(k, _)| !system.iter().any(|(s, _)| s == k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let _ = writeln!(out, "<details>\n<summary>settings ({})</summary>", settings.len());
    out.push_str(&kv_table(&settings));
    out.push_str("</details>\n</section>\n");
    out
}

/// One worst sample (heading level `h`): its headline and tags, then its attribution, a row
/// per part.
fn sample(stream: &str, s: &Sample, h: u8) -> String {
    let a = &s.attribution;
    let mut out = format!("<h{h}>{}: {}</h{h}>\n", escape(stream), escape(&summary::headline(s)));
    let mut rows: Vec<(String, String)> = s.tag.iter().map(|(k, v)| (format!("tag {k}"), v.clone())).collect();
    if let Some(c) = &a.cause {
        let secs = |ns: u64| format!("{:.6} s", ns as f64 / 1e9);
        rows.extend([
            ("running".into(), c.task.clone()),
            ("in".into(), c.path.clone()),
            ("holding".into(), c.lock.clone().unwrap_or_else(|| "-".into())),
            ("non-preemptible since".into(), secs(c.since_ns)),
            ("until".into(), secs(c.until_ns)),
            (
                "for".into(),
                format!("{:.3} ms", ms(c.until_ns.saturating_sub(c.since_ns))),
            ),
            ("ended by".into(), c.ended_by.clone()),
        ]);
    }
    let parts = summary::parts(a);
    if parts.iter().any(|&(_, p)| p > 0) {
        rows.extend(parts.iter().map(|(n, v)| (n.to_string(), format!("{:.3} ms", ms(*v)))));
    }
    let mut nonzero = |name: &str, ns: u64| {
        if ns > 0 {
            rows.push((name.into(), format!("{:.3} ms", ms(ns))));
        }
    };
    nonzero("asleep inside the call", a.blocked_ns);
    nonzero("the host (outside the kernel)", a.steal_ns);
    for (name, text) in [
        ("on the CPU meanwhile", summary::tasks(a)),
        ("interrupts", summary::irqs(a)),
        ("note", a.note.clone()),
    ] {
        if !text.is_empty() {
            rows.push((name.into(), text));
        }
    }
    if rows.is_empty() {
        out.push_str("<p>no attribution</p>\n");
    } else {
        out.push_str(&kv_table(&rows));
    }
    out
}

/// A run's `n` worst samples over all its streams, worst first, and its latency trace; its
/// heading at level `h`.
fn worst(i: usize, label: &str, r: &RunResult, n: usize, h: u8) -> String {
    let mut out = format!(
        "<section class=\"worst\">\n<h{h}>run {}: {}</h{h}>\n",
        i + 1,
        escape(label)
    );
    let mut samples: Vec<(&str, &Sample)> = r
        .streams
        .iter()
        .flat_map(|s| s.worst.iter().map(move |w| (s.name.as_str(), w)))
        .collect();
    samples.sort_by_key(|(_, w)| std::cmp::Reverse(w.latency_ns));
    if samples.is_empty() {
        out.push_str("<p>the result keeps no worst samples</p>\n");
    }
    for (stream, s) in samples.into_iter().take(n) {
        out.push_str(&sample(stream, s, h + 1));
    }
    if let Some(t) = &r.trace {
        let _ = writeln!(
            out,
            "<details class=\"trace\">\n<summary>/proc/latency_trace of the worst sample ({} entries)</summary>",
            t.entries.len()
        );
        let _ = writeln!(out, "<pre>{}</pre>\n</details>", escape(&latency_trace::render(t)));
    }
    out.push_str("</section>\n");
    out
}

/// One plot as a figure: the SVG markup inline, or why there is none.
fn figure(svg: Result<String, String>) -> String {
    match svg {
        Ok(svg) => format!("<figure>\n{}\n</figure>\n", svg.trim_end()),
        Err(e) => format!("<p>{}</p>\n", escape(&e)),
    }
}

/// The page's start: its title (escaped here) and the style, up to `<body>`.
fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n",
        escape(title)
    )
}

/// The page's end.
fn foot() -> String {
    format!(
        "<footer>written by latlab-report {} from saved results; nothing was run.</footer>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// The runs' labels in a sentence: all of them, or, past six, behind a `<details>`.
fn run_list(labels: &[&str]) -> String {
    let n = labels.len();
    let s = if n == 1 { "" } else { "s" };
    let list = escape(&labels.join(", "));
    if n <= 6 {
        format!("<p>{n} saved result{s}: {list}.</p>\n")
    } else {
        format!("<details>\n<summary>{n} saved results</summary>\n<p>{list}.</p>\n</details>\n")
    }
}

/// The sections of `runs` (at least one), with up to `samples` worst samples per run: the
/// runs' headers, rates, latency per stream, plots and worst samples. Their headings are at
/// level `h` (2 on a page of their own), element ids start with `id`.
fn sections(runs: &[RunResult], samples: usize, h: u8, id: &str) -> String {
    let labels = input::labels(runs);
    let l: Vec<&str> = labels.iter().map(String::as_str).collect();
    let refs: Vec<&RunResult> = runs.iter().collect();
    let sub = h + 1;
    let mut out = format!("<section id=\"{id}runs\">\n<h{h}>Runs</h{h}>\n");
    for (i, (label, r)) in l.iter().zip(runs).enumerate() {
        out.push_str(&run_header(i, label, r, sub, id));
    }
    out.push_str("</section>\n");

    let c = compare::compare(&l, &refs);
    if !c.rates.is_empty() {
        let _ = writeln!(out, "<section id=\"{id}rates\">\n<h{h}>Rates</h{h}>");
        out.push_str(&table("num rates", &c.rates));
        out.push_str("</section>\n");
    }
    let _ = writeln!(out, "<section id=\"{id}compare\">\n<h{h}>Latency per stream</h{h}>");
    if let Some(n) = &c.note {
        let _ = writeln!(out, "<p class=\"note\">note: {}</p>", escape(n));
    }
    for g in &c.groups {
        let _ = writeln!(
            out,
            "<h{sub}>stream {} ({})</h{sub}>",
            escape(&g.title),
            escape(&g.measures)
        );
        out.push_str(&table("num figures", &g.figures));
        out.push_str(&table("num histogram", &g.histogram));
    }
    out.push_str("</section>\n");
    if !c.cgroups.is_empty() {
        let _ = writeln!(out, "<section id=\"{id}cgroups\">\n<h{h}>Spikes by cgroup</h{h}>");
        out.push_str(&table("cgroups", &c.cgroups));
        out.push_str("</section>\n");
    }

    let _ = writeln!(out, "<section id=\"{id}plots\">\n<h{h}>Plots</h{h}>");
    let series = plot::series(runs, &labels, None);
    out.push_str(&figure(plot::distribution_svg("Latency distribution", &series)));
    out.push_str(&figure(plot::percentiles_svg("Latency by percentile", &series)));
    out.push_str("</section>\n");

    let _ = writeln!(
        out,
        "<section id=\"{id}worst\">\n<h{h}>Worst samples (up to {samples} per run)</h{h}>"
    );
    for (i, (label, r)) in l.iter().zip(runs).enumerate() {
        out.push_str(&worst(i, label, r, samples, sub));
    }
    out.push_str("</section>\n");
    out
}

/// The whole page for `runs` (at least one), with up to `samples` worst samples per run.
pub fn render(runs: &[RunResult], samples: usize) -> String {
    let labels = input::labels(runs);
    let l: Vec<&str> = labels.iter().map(String::as_str).collect();
    let mut out = head(&format!("latlab report: {}", l.join(", ")));
    out.push_str("<h1>latlab report</h1>\n");
    out.push_str(&run_list(&l));
    out.push_str(&sections(runs, samples, 2, ""));
    out.push_str(&foot());
    out
}

/// `latlab validate`'s page: its verdicts (`verdicts`, HTML made by
/// [`crate::validate::render_html`]), then for each scenario, named, its runs (the model's
/// first, then the machine's) as [`render`] shows runs, in a section with id `sc-NAME`
/// (the verdict table links there).
pub fn render_validate(title: &str, verdicts: &str, scenarios: &[(String, Vec<RunResult>)], samples: usize) -> String {
    let mut out = head(&format!("latlab validate: {title}"));
    let _ = writeln!(out, "<h1>latlab validate: {}</h1>", escape(title));
    let _ = writeln!(
        out,
        "<section id=\"verdicts\">\n<h2>Model beside machine</h2>\n{verdicts}</section>"
    );
    for (name, runs) in scenarios.iter().filter(|(_, r)| !r.is_empty()) {
        let id = crate::validate::anchor(name);
        let _ = writeln!(
            out,
            "<section class=\"scenario\" id=\"{id}\">\n<h2>scenario {}</h2>",
            escape(name)
        );
        out.push_str(&sections(runs, samples, 3, &format!("{id}-")));
        out.push_str("</section>\n");
    }
    out.push_str(&foot());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::tests::result;
    use latlab_core::Engine;

    /// The open elements left when every tag has been read, or the first mismatch: start
    /// tags push, end tags pop (`<x/>` and void elements do neither).
    fn unbalanced(html: &str) -> Result<(), String> {
        const VOID: [&str; 4] = ["meta", "br", "hr", "img"];
        let mut stack: Vec<String> = Vec::new();
        let mut rest = html;
        while let Some(open) = rest.find('<') {
            let close = rest[open..].find('>').ok_or("a `<` never closed")? + open;
            let tag = &rest[open + 1..close];
            rest = &rest[close + 1..];
            if tag.starts_with('!') || tag.starts_with('?') || tag.ends_with('/') {
                continue;
            }
            let name: String = tag
                .trim_start_matches('/')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            if tag.starts_with('/') {
                match stack.pop() {
                    Some(top) if top == name => {}
                    other => return Err(format!("</{name}> closes {other:?}")),
                }
            } else if !VOID.contains(&name.as_str()) {
                stack.push(name);
            }
        }
        if stack.is_empty() {
            Ok(())
        } else {
            Err(format!("left open: {stack:?}"))
        }
    }

    /// The timeline tests' model result (a worst sample under page_table_lock, with its
    /// latency_trace), with a setting.
    fn traced_model() -> RunResult {
        let mut r = crate::timeline::tests::model_result();
        r.meta.settings.insert("policy".into(), "SCHED_FIFO 99".into());
        r
    }

    #[test]
    fn escapes_what_comes_from_files() {
        assert_eq!(
            escape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
        let mut r = traced_model();
        r.meta.kernel = "<script>alert(1)</script>".into();
        r.meta.settings.insert("<b>".into(), "x & y".into());
        r.streams[0].worst[0].attribution.note = "a <note>".into();
        let html = render(&[r], 5);
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; (model)"));
        assert!(html.contains("<th>&lt;b&gt;</th><td>x &amp; y</td>"));
        assert!(html.contains("a &lt;note&gt;"));
        unbalanced(&html).unwrap();
    }

    #[test]
    fn tables_hold_the_comparison() {
        let a = traced_model();
        let b = result(Engine::Probe, "6.1", "cpu0", &[10_000, 20_000, 80_000, 80_000]);
        let html = render(&[a.clone(), b.clone()], 5);
        unbalanced(&html).unwrap();
        let c = compare::compare(&["2.4.18 (model)", "6.1 (probe)"], &[&a, &b]);
        assert_eq!(c.groups.len(), 1);
        let g = &c.groups[0];
        for row in g.figures.iter().skip(1).chain(g.histogram.iter().skip(1)) {
            let cells: Vec<String> = row.iter().skip(1).map(|x| format!("<td>{}</td>", escape(x))).collect();
            let tr = format!("<tr><th>{}</th>{}</tr>", escape(&row[0]), cells.concat());
            assert!(html.contains(&tr), "{tr} in {html}");
        }
        assert!(html.contains("<tr><th>count</th><td>2</td><td>4</td><td>2.00x</td></tr>"));
        assert!(html.contains(
            "<thead><tr><th>latency</th><th>2.4.18 (model)</th><th>6.1 (probe)</th><th>ratio</th></tr></thead>"
        ));
        assert!(html.contains("note: no stream name is in every run"));
    }

    #[test]
    fn plots_are_inline_svg_and_samples_are_explained() {
        let html = render(&[traced_model()], 5);
        assert_eq!(html.matches("<figure>\n<svg").count(), 2, "{html}");
        // Self-contained: nothing fetched, no script.
        for external in ["<script", "<link", "src=", "href=", "url(", "@import"] {
            assert!(!html.contains(external), "{external} in {html}");
        }
        assert!(html.contains("<h4>realfeel: 1.152 ms at t=5.893 s</h4>"), "{html}");
        assert_eq!(html.matches("<h4>").count(), 3, "the result keeps three");
        assert!(html.contains("<tr><th>in</th><td>zap_page_range &lt;- do_exit</td></tr>"));
        assert!(html.contains("<tr><th>holding</th><td>page_table_lock</td></tr>"));
        assert!(html.contains("<tr><th>until</th><td>5.893725 s</td></tr>"), "{html}");
        assert!(html.contains("<tr><th>waiting for preemption</th><td>1.139 ms</td></tr>"));
        assert!(html.contains("<tr><th>on the CPU meanwhile</th><td>cc1/15 1.139 ms</td></tr>"));
        assert!(html.contains("<tr><th>interrupts</th><td>rtc x3</td></tr>"));
        assert!(html.contains("<summary>settings (1)</summary>"));
        assert!(html.contains("<pre>preemption latency trace v1.0.7 on 2.4.18 (latlab model)\n"));
    }

    #[test]
    fn no_trace_no_trace_section_and_samples_capped() {
        let mut r = result(Engine::Probe, "6.1", "cpu0", &[10_000, 20_000]);
        for k in 0..4u64 {
            let mut s = traced_model().streams[0].worst[0].clone();
            s.latency_ns = 20_000 - k;
            r.streams[0].worst.push(s);
        }
        let html = render(&[r.clone()], 2);
        assert!(!html.contains("latency_trace") && !html.contains("<pre>"), "{html}");
        assert_eq!(html.matches("<h4>").count(), 2);
        unbalanced(&html).unwrap();
        r.streams[0].worst.clear();
        assert!(render(&[r], 2).contains("<p>the result keeps no worst samples</p>"));
        // An empty stream: the plots say why they are missing, the page is still whole.
        let empty = result(Engine::Probe, "6.1", "cpu0", &[]);
        let html = render(&[empty], 5);
        assert_eq!(html.matches("<p>no samples to plot</p>").count(), 2);
        unbalanced(&html).unwrap();
    }

    #[test]
    fn the_balance_check_catches_a_stray_tag() {
        assert!(unbalanced("<p><b>x</p>").is_err());
        assert!(unbalanced("<table><tr></table>").is_err());
        assert!(unbalanced("<p><br><svg><circle/></svg></p>").is_ok());
    }

    #[test]
    fn the_page_groups_spikes_by_cgroup() {
        let b = crate::summary::tests::with_cgroups(&[("/lxc.payload.web", Some(("lxc", "web")), 250_000)]);
        let html = render(std::slice::from_ref(&b), 5);
        unbalanced(&html).unwrap();
        assert!(html.contains("<h2>Spikes by cgroup</h2>"), "{html}");
        assert!(
            html.contains("<td>/lxc.payload.web</td><td>lxc web</td><td>1</td><td>250.0 us</td></tr>"),
            "{html}"
        );
        let plain = render(&[result(Engine::Probe, "6.1", "cpu0", &[1_000])], 5);
        assert!(!plain.contains("by cgroup"));
    }
}
