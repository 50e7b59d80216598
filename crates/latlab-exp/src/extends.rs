//! Kernel variants that extend a base: a variant file may start from another variant
//! (`extends = "2.6.9-rc1"`, a built-in's name or a variant file's path) and give only what
//! its patch changes. Its own `name` and `description` are required; every other key it sets
//! replaces the base's (a table such as `[cfs]` key by key); the base's rescheduling points
//! change with `points_add` and `points_remove` (a variant that extends never gives a whole
//! `points` list). A base may extend another; a cycle is refused. One base per kernel
//! generation stands flat in `variants/` (`2.4.17`, `2.4.18`, `2.6.9-rc1`, `2.6.17`,
//! `2.6.35`, `3.2+io-less`, `6.18-eevdf-none`); its patches extend it.
//!
//! Errors name the file that set the offending value (the variant's own, or the base's), its
//! line and the field.

use crate::file::{find_field, syntax, ExpError};
use latlab_sim::kernel::catalog::PointSet;
use latlab_sim::Variant;
use toml::{Table, Value};

/// One file of a variant's chain of bases.
pub(crate) struct Layer {
    /// The name errors give the file (`variants/2.6.9-rc1.toml`, or a path as written).
    pub file: String,
    pub text: String,
    table: Table,
}

/// The most bases a variant may stand on (a longer chain is a mistake, not a kernel).
const MAX_DEPTH: usize = 16;

/// Reads a variant (or a base) named at `origin:line`: the file's name for errors and its text.
pub(crate) type Read<'a> = &'a dyn Fn(&str, usize, &str) -> Result<(String, String), ExpError>;

/// The variant `name` names and every base it extends, the variant first.
pub(crate) fn chain(origin: &str, line: usize, name: &str, read: Read) -> Result<Vec<Layer>, ExpError> {
    let mut layers: Vec<Layer> = Vec::new();
    let (mut origin, mut line, mut name) = (origin.to_string(), line, name.to_string());
    loop {
        let (file, text) = read(&origin, line, &name).map_err(|e| match e {
            // A base that cannot be read is the `extends` line's, not an experiment's `variant`.
            ExpError::Field { origin, line, why, .. } if !layers.is_empty() => ExpError::Field {
                origin,
                line,
                field: "extends".into(),
                why,
            },
            e => e,
        })?;
        if let Some(first) = layers.iter().position(|l| l.file == file) {
            let cycle: Vec<&str> = layers[first..]
                .iter()
                .map(|l| l.file.as_str())
                .chain([file.as_str()])
                .collect();
            return Err(ExpError::Field {
                origin,
                line,
                field: "extends".into(),
                why: format!("a cycle of bases: {}", cycle.join(" -> ")),
            });
        }
        if layers.len() == MAX_DEPTH {
            return Err(ExpError::Field {
                origin,
                line,
                field: "extends".into(),
                why: format!("more than {MAX_DEPTH} bases deep"),
            });
        }
        let table: Table = toml::from_str(&text).map_err(|e| syntax(&file, &text, e))?;
        let next = match table.get("extends") {
            None => None,
            Some(Value::String(base)) => Some(base.clone()),
            Some(other) => {
                return Err(ExpError::Field {
                    line: find_field(&text, "extends").unwrap_or(1),
                    origin: file,
                    field: "extends".into(),
                    why: format!("must be a variant's name or file path (a string), got {other}"),
                })
            }
        };
        line = find_field(&text, "extends").unwrap_or(1);
        origin.clone_from(&file);
        layers.push(Layer { file, text, table });
        match next {
            Some(base) => name = base,
            None => return Ok(layers),
        }
    }
}

/// The variant of a chain of two or more layers (the variant first): each layer applied over
/// its base, then parsed and validated as a flat variant file would be.
pub(crate) fn resolve(layers: &[Layer]) -> Result<Variant, ExpError> {
    let (root, children) = layers.split_last().expect("a chain has its variant");
    let mut merged = root.table.clone();
    for layer in children.iter().rev() {
        apply(&mut merged, layer)?;
    }
    let text = toml::to_string(&merged).map_err(|e| ExpError::Field {
        origin: layers[0].file.clone(),
        line: 0,
        field: "extends".into(),
        why: format!("the variant over its bases does not form a TOML document: {e}"),
    })?;
    let v: Variant = toml::from_str(&text).map_err(|e| locate(layers, &text, syntax("", &text, e)))?;
    v.validate().map_err(|(field, why)| {
        locate(
            layers,
            &text,
            ExpError::Field {
                origin: String::new(),
                line: 0,
                field: field.into(),
                why,
            },
        )
    })?;
    Ok(v)
}

/// `layer` over `merged` (its bases, already merged).
fn apply(merged: &mut Table, layer: &Layer) -> Result<(), ExpError> {
    let err = |field: &str, line: Option<usize>, why: String| ExpError::Field {
        origin: layer.file.clone(),
        line: line.or_else(|| find_field(&layer.text, field)).unwrap_or(1),
        field: field.into(),
        why,
    };
    for own in ["name", "description"] {
        if !layer.table.contains_key(own) {
            return Err(err(
                "extends",
                None,
                format!("a variant that extends a base gives its own `{own}`"),
            ));
        }
    }
    if layer.table.contains_key("points") {
        return Err(err(
            "points",
            None,
            "a variant that extends a base changes the base's points with `points_add` and `points_remove`, not a whole `points` list".into(),
        ));
    }
    let base_name = merged.get("name").and_then(Value::as_str).unwrap_or("?").to_string();
    let mut points: Vec<String> = match merged.get("points") {
        Some(Value::Array(a)) => a.iter().filter_map(|p| p.as_str().map(str::to_string)).collect(),
        _ => Vec::new(),
    };
    for (key, value) in &layer.table {
        match key.as_str() {
            "extends" => {}
            "points_add" | "points_remove" => {
                let names = string_list(value).ok_or_else(|| err(key, None, "must be a list of point names".into()))?;
                for n in names {
                    let at = line_of_item(&layer.text, key, n);
                    let present = points.iter().position(|p| p == n);
                    if key == "points_add" {
                        PointSet::from_names([n]).map_err(|why| err(key, at, why))?;
                        if present.is_some() {
                            return Err(err(key, at, format!("`{n}` is already a point of base `{base_name}`")));
                        }
                        points.push(n.to_string());
                    } else {
                        let Some(i) = present else {
                            return Err(err(
                                key,
                                at,
                                format!(
                                    "`{n}` is not a point of base `{base_name}`; its points: {}",
                                    points.join(", ")
                                ),
                            ));
                        };
                        points.remove(i);
                    }
                }
            }
            _ => merge(merged, key, value),
        }
    }
    merged.insert(
        "points".into(),
        Value::Array(points.into_iter().map(Value::String).collect()),
    );
    Ok(())
}

/// `value` set at `key` over what the bases set: a table key by key, anything else replaced.
fn merge(into: &mut Table, key: &str, value: &Value) {
    match (into.get_mut(key), value) {
        (Some(Value::Table(base)), Value::Table(own)) => {
            for (k, v) in own {
                merge(base, k, v);
            }
        }
        _ => {
            into.insert(key.into(), value.clone());
        }
    }
}

fn string_list(v: &Value) -> Option<Vec<&str>> {
    v.as_array()?.iter().map(Value::as_str).collect()
}

/// Line of `"name"` in the list `key` starts (a list may span lines).
fn line_of_item(text: &str, key: &str, name: &str) -> Option<usize> {
    let start = find_field(text, key)?;
    let quoted = format!("\"{name}\"");
    text.lines()
        .enumerate()
        .skip(start - 1)
        .find(|(_, l)| l.contains(&quoted))
        .map(|(i, _)| i + 1)
}

/// An error found in the merged variant, moved to the file (the variant's own, or the
/// nearest base's) that set the field, at its line.
fn locate(layers: &[Layer], merged: &str, e: ExpError) -> ExpError {
    let (field, why) = match e {
        ExpError::Field { field, why, .. } => (field, why),
        ExpError::Syntax { line, msg, .. } => match key_at_line(merged, line) {
            Some(field) => (field, msg),
            // Nothing on that line names a key the files set: the merged whole is at fault.
            None => {
                return ExpError::Field {
                    origin: layers[0].file.clone(),
                    line: 0,
                    field: "extends".into(),
                    why: format!("the variant over its bases: {msg}"),
                }
            }
        },
        other => return other,
    };
    let (origin, line) = layers
        .iter()
        .find_map(|l| find_field(&l.text, &field).map(|line| (l.file.clone(), line)))
        .unwrap_or_else(|| (layers[0].file.clone(), 0));
    ExpError::Field {
        origin,
        line,
        field,
        why,
    }
}

/// The key set on 1-based `line` of `text`, dotted with its table; or the table a `[header]`
/// line opens (a table missing a field is reported at its header).
fn key_at_line(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.get(line.checked_sub(1)?)?.trim();
    if let Some(table) = at.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        return Some(table.trim().to_string());
    }
    let key = at.split_once('=')?.0.trim();
    let table = lines[..line - 1]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim());
    Some(match table {
        Some(t) if !t.is_empty() => format!("{t}.{key}"),
        _ => key.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use crate::file::tests::{user_files, GOOD};
    use crate::file::{no_files, parse, variant};

    /// The error of an experiment whose variant is `./kernel.toml`, given the user's files.
    fn error_with(files: &[(&str, String)]) -> String {
        let text = GOOD.replace("variant = \"2.4.18\"", "variant = \"./kernel.toml\"");
        parse("x.toml", &text, &user_files(files)).unwrap_err().to_string()
    }

    fn line_of(text: &str, needle: &str) -> usize {
        text.lines().position(|l| l.contains(needle)).unwrap() + 1
    }

    const MINE: &str = "name = \"mine\"\ndescription = \"a what-if\"\nextends = \"2.4.18+mini-ll\"\n";

    #[test]
    fn a_variant_over_its_bases_is_the_base_with_the_changes() {
        let mine =
            format!("{MINE}preempt = \"preempt\"\npoints_remove = [\"bread\"]\npoints_add = [\"prune_dcache\"]\n");
        let text = GOOD.replace("variant = \"2.4.18\"", "variant = \"./kernel.toml\"");
        let e = parse("x.toml", &text, &user_files(&[("kernel.toml", mine)])).unwrap();
        let v = &e.runs[0].config.variant;
        let base = variant("t", "2.4.18+mini-ll", 0, &no_files).unwrap();
        assert_eq!(v.name, "mine");
        assert_eq!(v.preempt, latlab_sim::PreemptModel::Full);
        assert_eq!(v.hz, base.hz);
        let names = |v: &latlab_sim::Variant| v.points.iter().map(|p| p.info().name).collect::<Vec<_>>();
        let mut want: Vec<&str> = names(&base).into_iter().filter(|n| *n != "bread").collect();
        want.push("prune_dcache");
        want.sort_unstable();
        let mut got = names(v);
        got.sort_unstable();
        assert_eq!(got, want);
        // A table key by key: the child's [cfs] changes one tunable, keeps the others.
        let gran = variant("t", "2.6.35+dyn-gran", 0, &no_files).unwrap();
        let stock = variant("t", "2.6.35", 0, &no_files).unwrap();
        assert_eq!(gran.cfs_tunables().min_granularity_ns, 750_000);
        assert_eq!(gran.cfs_tunables().latency_ns, stock.cfs_tunables().latency_ns);
    }

    #[test]
    fn a_point_the_base_lacks_or_already_has_names_file_line_and_field() {
        let mine = format!("{MINE}points_remove = [\n    \"prune_dcache\",\n]\n");
        let err = error_with(&[("kernel.toml", mine.clone())]);
        let line = line_of(&mine, "\"prune_dcache\"");
        assert!(
            err.starts_with(&format!(
                "dir/kernel.toml:{line}: field `points_remove`: `prune_dcache` is not a point of base `2.4.18+mini-ll`"
            )),
            "{err}"
        );
        let mine = format!("{MINE}points_add = [\"bread\"]\n");
        let err = error_with(&[("kernel.toml", mine)]);
        assert!(
            err.starts_with("dir/kernel.toml:4: field `points_add`: `bread` is already a point"),
            "{err}"
        );
        let mine = format!("{MINE}points_add = [\"bred\"]\n");
        let err = error_with(&[("kernel.toml", mine)]);
        assert!(
            err.starts_with("dir/kernel.toml:4: field `points_add`: unknown rescheduling point `bred`"),
            "{err}"
        );
        let mine = format!("{MINE}points = [\"bread\"]\n");
        let err = error_with(&[("kernel.toml", mine)]);
        assert!(
            err.starts_with("dir/kernel.toml:4: field `points`: ") && err.contains("points_add"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_value_is_reported_in_the_file_that_set_it() {
        // The user's own field.
        let mine = format!("{MINE}sched = \"bfs\"\n");
        let err = error_with(&[("kernel.toml", mine)]);
        assert!(
            err.starts_with("dir/kernel.toml:4: field `sched`: ") && err.contains("`bfs`"),
            "{err}"
        );
        let mine = format!("{MINE}timer = \"hrtimer\"\n");
        let err = error_with(&[("kernel.toml", mine)]);
        assert!(
            err.starts_with("dir/kernel.toml:4: field `timer`: ") && err.contains("2.6.16"),
            "{err}"
        );
        // A field the user's own base file set.
        let base = "name = \"b\"\ndescription = \"d\"\nextends = \"2.4.18\"\nhz = 5\n".to_string();
        let mine = "name = \"mine\"\ndescription = \"a what-if\"\nextends = \"./base.toml\"\n".to_string();
        let err = error_with(&[("kernel.toml", mine), ("base.toml", base)]);
        assert_eq!(err, "dir/base.toml:4: field `hz`: must be 10..=10000, got 5");
        // An unknown key.
        // A table the base lacks, given short of a field: the child's table, its line.
        let mine = format!("{MINE}\n[cfs]\nlatency_ns = 5\n");
        let err = error_with(&[("kernel.toml", mine)]);
        assert!(
            err.starts_with("dir/kernel.toml:5: field `cfs`: ") && err.contains("missing field"),
            "{err}"
        );
        let mine = format!("{MINE}premept = \"none\"\n");
        let err = error_with(&[("kernel.toml", mine)]);
        assert!(
            err.starts_with("dir/kernel.toml:4: field `premept`: ") && err.contains("unknown field"),
            "{err}"
        );
    }

    #[test]
    fn a_cycle_a_missing_base_or_a_missing_name_is_refused() {
        let a = "name = \"a\"\ndescription = \"d\"\nextends = \"./b.toml\"\n".to_string();
        let b = "name = \"b\"\ndescription = \"d\"\n\nextends = \"./kernel.toml\"\n".to_string();
        let err = error_with(&[("kernel.toml", a), ("b.toml", b)]);
        assert_eq!(
            err,
            "dir/b.toml:4: field `extends`: a cycle of bases: dir/kernel.toml -> dir/b.toml -> dir/kernel.toml"
        );
        let mine = "name = \"mine\"\ndescription = \"d\"\nextends = \"2.4.99\"\n".to_string();
        let err = error_with(&[("kernel.toml", mine)]);
        assert!(
            err.starts_with("dir/kernel.toml:3: unknown kernel variant `2.4.99`"),
            "{err}"
        );
        let mine = "description = \"d\"\nextends = \"2.4.18\"\n".to_string();
        let err = error_with(&[("kernel.toml", mine)]);
        assert!(
            err.starts_with("dir/kernel.toml:2: field `extends`: ") && err.contains("own `name`"),
            "{err}"
        );
        let mine = "name = \"mine\"\ndescription = \"d\"\nextends = \"./gone.toml\"\n".to_string();
        let err = error_with(&[("kernel.toml", mine)]);
        assert!(
            err.starts_with("dir/kernel.toml:3: field `extends`: cannot read kernel variant file `./gone.toml`"),
            "{err}"
        );
        let mine = "name = \"mine\"\ndescription = \"d\"\nextends = 3\n".to_string();
        let err = error_with(&[("kernel.toml", mine)]);
        assert!(err.starts_with("dir/kernel.toml:3: field `extends`: must be"), "{err}");
    }
}
