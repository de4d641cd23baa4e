//! Field values: a dump record's value of the `--keep-by` field, as it is compared.
//!
//! One total order over what a JSON Lines value or a Parquet cell can hold: numbers (integers
//! exactly, against each other and against floats; booleans as 0 and 1; Parquet timestamps
//! and dates as nanoseconds since the epoch, so a date column and a timestamp column compare)
//! and then strings, by their bytes. A value of another kind (null, an array, an object, a
//! float that is NaN) is no value: the record is one without the field.

use std::cmp::Ordering;

use serde_json::Value;

/// A comparable value.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    /// An integer, a boolean (0, 1), a decimal without a fraction, a timestamp or a date (in
    /// nanoseconds since the epoch).
    Int(i128),
    /// A float (never NaN, never -0.0: [`FieldValue::float`] makes them), or a decimal with a
    /// fraction.
    Float(f64),
    /// A string.
    Text(Box<str>),
}

impl FieldValue {
    /// The value of a JSON value; None for null, arrays and objects.
    pub fn of_json(v: &Value) -> Option<FieldValue> {
        match v {
            Value::Bool(b) => Some(FieldValue::Int(i128::from(*b))),
            Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Some(FieldValue::Int(i128::from(i))),
                (None, Some(u)) => Some(FieldValue::Int(i128::from(u))),
                _ => n.as_f64().and_then(FieldValue::float),
            },
            Value::String(s) => Some(FieldValue::Text(s.as_str().into())),
            _ => None,
        }
    }

    /// A float's value; None for NaN. -0.0 is 0.0: one number, so a tie with 0.0 and with the
    /// integer 0 (the order, and a work file's bytes, would otherwise tell them apart).
    pub fn float(f: f64) -> Option<FieldValue> {
        // IEEE 754: -0.0 + 0.0 is +0.0, every other value is unchanged.
        (!f.is_nan()).then_some(FieldValue::Float(f + 0.0))
    }

    /// The value as bytes (a work file's column): a tag, then the value.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(17);
        match self {
            FieldValue::Int(i) => {
                out.push(b'i');
                out.extend_from_slice(&i.to_le_bytes());
            }
            FieldValue::Float(f) => {
                out.push(b'f');
                out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
            FieldValue::Text(s) => {
                out.push(b's');
                out.extend_from_slice(s.as_bytes());
            }
        }
        out
    }

    /// The value [`FieldValue::to_bytes`] wrote; None when the bytes are no such value.
    pub fn from_bytes(b: &[u8]) -> Option<FieldValue> {
        let (tag, rest) = b.split_first()?;
        match tag {
            b'i' => Some(FieldValue::Int(i128::from_le_bytes(rest.try_into().ok()?))),
            b'f' => FieldValue::float(f64::from_bits(u64::from_le_bytes(rest.try_into().ok()?))),
            b's' => Some(FieldValue::Text(std::str::from_utf8(rest).ok()?.into())),
            _ => None,
        }
    }
}

impl Eq for FieldValue {}

impl PartialOrd for FieldValue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for FieldValue {
    fn cmp(&self, other: &Self) -> Ordering {
        use FieldValue::*;
        match (self, other) {
            (Int(a), Int(b)) => a.cmp(b),
            (Float(a), Float(b)) => a.total_cmp(b),
            (Int(a), Float(b)) => int_to_float(*a, *b),
            (Float(a), Int(b)) => int_to_float(*b, *a).reverse(),
            (Text(a), Text(b)) => a.cmp(b),
            (Text(_), _) => Ordering::Greater,
            (_, Text(_)) => Ordering::Less,
        }
    }
}

/// An integer against a float, exactly: 2^53 + 1 is more than 2^53 as a float, though the
/// float nearest to it is 2^53.
fn int_to_float(i: i128, f: f64) -> Ordering {
    // ±2^127: beyond them the float is beyond every i128.
    const LIMIT: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;
    if f >= LIMIT {
        return Ordering::Less;
    }
    if f < -LIMIT {
        return Ordering::Greater;
    }
    let whole = f.trunc();
    // Equal whole parts: the float's fraction decides.
    let fraction = f - whole;
    i.cmp(&(whole as i128)).then(if fraction > 0.0 {
        Ordering::Less
    } else if fraction < 0.0 {
        Ordering::Greater
    } else {
        Ordering::Equal
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compare_exactly_and_come_before_strings() {
        let v = |s: &str| FieldValue::of_json(&serde_json::from_str(s).unwrap());
        let mut values: Vec<FieldValue> = [
            "\"b\"",
            "9007199254740993",
            "9007199254740992.0",
            "-1.5",
            "true",
            "\"a\"",
            "-2",
            "0.5",
            "18446744073709551615",
            "1e300",
        ]
        .iter()
        .map(|s| v(s).unwrap())
        .collect();
        values.sort();
        let shown: Vec<String> = values.iter().map(|x| format!("{x:?}")).collect();
        assert_eq!(
            shown,
            [
                "Int(-2)",
                "Float(-1.5)",
                "Float(0.5)",
                "Int(1)",
                "Float(9007199254740992.0)",
                "Int(9007199254740993)",
                "Int(18446744073709551615)",
                "Float(1e300)",
                "Text(\"a\")",
                "Text(\"b\")",
            ]
        );
        for none in ["null", "[1]", "{\"a\":1}"] {
            assert_eq!(v(none), None, "{none}");
        }
        assert_eq!(FieldValue::float(f64::NAN), None);
        let zero = FieldValue::float(-0.0).unwrap();
        assert_eq!(zero.cmp(&FieldValue::float(0.0).unwrap()), Ordering::Equal);
        assert_eq!(zero.cmp(&FieldValue::Int(0)), Ordering::Equal);
        assert_eq!(zero, v("-0.0").unwrap());
        assert_eq!(zero.to_bytes(), v("0.0").unwrap().to_bytes());
        assert_eq!(
            FieldValue::Int(3).cmp(&FieldValue::Float(3.0)),
            Ordering::Equal
        );
    }

    #[test]
    fn values_round_trip_through_bytes() {
        for v in [
            FieldValue::Int(i128::MIN),
            FieldValue::Float(-0.25),
            FieldValue::Text("é".into()),
        ] {
            assert_eq!(FieldValue::from_bytes(&v.to_bytes()), Some(v));
        }
        assert_eq!(FieldValue::from_bytes(b"i12"), None);
        assert_eq!(FieldValue::from_bytes(b""), None);
    }
}
