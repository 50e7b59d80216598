//! How far a constant of the model may be off: the range its source allows (issue 20,
//! docs/fidelity.md "Uncertainty"). Every machine-profile field (its `[uncertainty]` table),
//! every catalog cost (`#[spread(...)]` beside the item) and every workload size
//! (`workload::sizes::SIZES`) states one, by the kind of source its comment cites:
//!
//! - `given`: stated exactly (a seed's figure, a kernel constant, a spec sheet's capacity):
//!   not varied;
//! - `measured`: measured on hardware of the era (lmbench, hdparm): +-10 %;
//! - `counted`: counted from the kernel code (instructions and misses of a code path, or
//!   arithmetic from such counts): +-30 %;
//! - `estimate`: an estimate with no measurement or count behind it: x2 either way;
//! - `[lo, hi]`: the bounds the source itself gives (lmbench's 160-197 ns), in the
//!   constant's unit.
//!
//! `latlab uncertainty` draws each varied constant log-uniformly within its bounds.

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The range a constant's source allows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Spread {
    /// Stated exactly by the source: not varied.
    Given,
    /// Measured on era hardware: +-10 %.
    Measured,
    /// Counted from the kernel code: +-30 %.
    Counted,
    /// An estimate: x2 either way.
    Estimate,
    /// Bounds the source gives, in the constant's unit.
    Between(f64, f64),
}

/// Every class name a file may give, in order.
pub const CLASSES: &[&str] = &["given", "measured", "counted", "estimate"];

impl Spread {
    /// The bounds for a constant of `value`, or `None` when it is not varied (given, or a
    /// zero that a relative range leaves at zero).
    pub fn bounds(self, value: f64) -> Option<(f64, f64)> {
        let rel = |f: f64| (value > 0.0).then_some((value * (1.0 - f), value * (1.0 + f)));
        match self {
            Spread::Given => None,
            Spread::Measured => rel(0.1),
            Spread::Counted => rel(0.3),
            Spread::Estimate => (value > 0.0).then_some((value / 2.0, value * 2.0)),
            Spread::Between(lo, hi) => (lo < hi).then_some((lo, hi)),
        }
    }

    /// The class's name (`counted`), or `lo..hi` for source bounds.
    pub fn name(self) -> String {
        match self {
            Spread::Given => "given".into(),
            Spread::Measured => "measured".into(),
            Spread::Counted => "counted".into(),
            Spread::Estimate => "estimate".into(),
            Spread::Between(lo, hi) => format!("{lo}..{hi}"),
        }
    }

    /// Bounds a file gave are usable for a constant of `value`: positive (a log-uniform draw
    /// needs them), in order, and around the value. `Err` says why not.
    pub fn check(self, value: f64) -> Result<(), String> {
        if let Spread::Between(lo, hi) = self {
            if !(lo.is_finite() && hi.is_finite() && lo > 0.0 && lo <= hi) {
                return Err(format!("bounds [{lo}, {hi}] must be positive numbers, the lower first"));
            }
            if !(lo..=hi).contains(&value) {
                return Err(format!("bounds [{lo}, {hi}] do not hold the value {value}"));
            }
        }
        Ok(())
    }

    fn from_name(s: &str) -> Option<Spread> {
        Some(match s {
            "given" => Spread::Given,
            "measured" => Spread::Measured,
            "counted" => Spread::Counted,
            "estimate" => Spread::Estimate,
            _ => return None,
        })
    }
}

impl Serialize for Spread {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Spread::Between(lo, hi) => {
                let mut seq = s.serialize_seq(Some(2))?;
                seq.serialize_element(&lo)?;
                seq.serialize_element(&hi)?;
                seq.end()
            }
            other => s.serialize_str(&other.name()),
        }
    }
}

/// One value of an `[uncertainty]` table: a spread, or a nested table (`[uncertainty.disk]`).
enum Entry {
    Leaf(Spread),
    Table(BTreeMap<String, Entry>),
}

struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = Entry;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "one of {}, or bounds [lo, hi]", CLASSES.join(", "))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Entry, E> {
        Spread::from_name(v).map(Entry::Leaf).ok_or_else(|| {
            E::custom(format!(
                "unknown spread `{v}`; valid: {}, or bounds [lo, hi]",
                CLASSES.join(", ")
            ))
        })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Entry, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = seq.next_element::<f64>()? {
            v.push(x);
        }
        match v[..] {
            [lo, hi] => Ok(Entry::Leaf(Spread::Between(lo, hi))),
            _ => Err(de::Error::custom(format!(
                "bounds need two numbers [lo, hi], got {}",
                v.len()
            ))),
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entry, A::Error> {
        let mut t = BTreeMap::new();
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(EntrySeed)?;
            t.insert(k, v);
        }
        Ok(Entry::Table(t))
    }
}

struct EntrySeed;

impl<'de> de::DeserializeSeed<'de> for EntrySeed {
    type Value = Entry;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Entry, D::Error> {
        d.deserialize_any(EntryVisitor)
    }
}

/// A machine profile's `[uncertainty]` table: the spread of each field, by the field's dotted
/// name (`disk.seq_mb_s`; a file may write it as `[uncertainty.disk]`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spreads(pub BTreeMap<String, Spread>);

impl Spreads {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn get(&self, field: &str) -> Option<Spread> {
        self.0.get(field).copied()
    }
}

impl Serialize for Spreads {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Spreads {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        fn flatten(prefix: &str, t: BTreeMap<String, Entry>, out: &mut BTreeMap<String, Spread>) {
            for (k, v) in t {
                let key = format!("{prefix}{k}");
                match v {
                    Entry::Leaf(s) => {
                        out.insert(key, s);
                    }
                    Entry::Table(sub) => flatten(&format!("{key}."), sub, out),
                }
            }
        }
        match d.deserialize_map(EntryVisitor)? {
            Entry::Table(t) => {
                let mut out = BTreeMap::new();
                flatten("", t, &mut out);
                Ok(Spreads(out))
            }
            Entry::Leaf(_) => Err(de::Error::custom("expected a table of field = spread")),
        }
    }
}

/// A catalog item's spreads: its instructions' and its misses'.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ItemSpread {
    pub instr: Spread,
    pub misses: Spread,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_follow_the_class() {
        assert_eq!(Spread::Given.bounds(5.0), None);
        let (lo, hi) = Spread::Measured.bounds(100.0).unwrap();
        assert!((lo - 90.0).abs() < 1e-9 && (hi - 110.0).abs() < 1e-9);
        let (lo, hi) = Spread::Counted.bounds(10.0).unwrap();
        assert!((lo - 7.0).abs() < 1e-9 && (hi - 13.0).abs() < 1e-9);
        assert_eq!(Spread::Estimate.bounds(6.0), Some((3.0, 12.0)));
        assert_eq!(Spread::Estimate.bounds(0.0), None);
        assert_eq!(Spread::Between(160.0, 197.0).bounds(175.0), Some((160.0, 197.0)));
        assert!(Spread::Between(160.0, 197.0).check(200.0).unwrap_err().contains("200"));
        assert!(Spread::Between(0.0, 1.0).check(0.5).unwrap_err().contains("positive"));
    }

    #[test]
    fn a_table_reads_classes_bounds_and_nested_tables_and_writes_them_back() {
        #[derive(Deserialize, Serialize)]
        struct T {
            u: Spreads,
        }
        let t: T = serde_json::from_str(
            r#"{"u": {"a": "counted", "b": [1.0, 2.0], "disk": {"c": "given"}, "disk.d": "estimate"}}"#,
        )
        .unwrap();
        assert_eq!(t.u.get("a"), Some(Spread::Counted));
        assert_eq!(t.u.get("b"), Some(Spread::Between(1.0, 2.0)));
        assert_eq!(t.u.get("disk.c"), Some(Spread::Given));
        assert_eq!(t.u.get("disk.d"), Some(Spread::Estimate));
        let back: T = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back.u, t.u);
        let e = serde_json::from_str::<T>(r#"{"u": {"a": "guess"}}"#)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("guess") && e.contains("estimate"), "{e}");
        let e = serde_json::from_str::<T>(r#"{"u": {"a": [1.0]}}"#)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("two numbers"), "{e}");
    }
}
