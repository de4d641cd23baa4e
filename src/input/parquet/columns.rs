//! Columns: a dotted field name → the Parquet column it names (through struct columns), checked
//! against the file's schema; and one row's text or id taken from a decoded batch, the id
//! rendered exactly as a JSON Lines id (a string as it is; anything else as compact JSON with
//! object keys sorted). The module reads no file (see [`super::rows`]).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type, Float16Type, Float32Type,
    Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type,
    UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Fields};
use serde_json::Value;

use crate::input::field_value::FieldValue;

/// Columns named in a "no such column" message, at most: a wide table lists the rest as a count.
const LISTED_COLUMNS: usize = 40;

/// The field at `path` in `fields`, descending through struct columns; None when a segment is
/// missing or a column on the way is not a struct.
pub fn find<'f>(fields: &'f Fields, path: &[String]) -> Option<&'f Field> {
    let (first, rest) = path.split_first()?;
    let mut field = fields.iter().find(|f| f.name() == first)?;
    for segment in rest {
        let DataType::Struct(children) = field.data_type() else {
            return None;
        };
        field = children.iter().find(|f| f.name() == segment)?;
    }
    Some(field)
}

/// The field a dotted name (`path`, split at its dots) names, and its path of column names:
/// each dot steps into a struct column, or is part of a column's own name (`meta.text`, as
/// pandas' `json_normalize` and Spark's flattening name columns). None when no field has the
/// name; an error naming the fields when more than one has it (`meta.text` both the field `text`
/// of the struct `meta` and a column so named), since either reading could be the wrong one.
pub fn resolve<'f>(
    fields: &'f Fields,
    path: &[String],
) -> Result<Option<(Vec<String>, &'f Field)>, String> {
    fn walk<'f>(
        fields: &'f Fields,
        path: &[String],
        above: &mut Vec<String>,
        found: &mut Vec<(Vec<String>, &'f Field)>,
    ) {
        for take in 1..=path.len() {
            let name = path[..take].join(".");
            let Some(field) = fields.iter().find(|f| *f.name() == name) else {
                continue;
            };
            above.push(name);
            if take == path.len() {
                found.push((above.clone(), field.as_ref()));
            } else if let DataType::Struct(children) = field.data_type() {
                walk(children, &path[take..], above, found);
            }
            above.pop();
        }
    }
    let mut found = Vec::new();
    walk(fields, path, &mut Vec::new(), &mut found);
    match found.len() {
        0 | 1 => Ok(found.pop()),
        _ => {
            let readings: Vec<String> = (found.iter())
                .map(|(p, _)| match &p[..] {
                    [column] => format!("the column \"{column}\""),
                    _ => {
                        let quoted: Vec<String> = p.iter().map(|n| format!("\"{n}\"")).collect();
                        format!("the struct field {}", quoted.join(" > "))
                    }
                })
                .collect();
            Err(format!(
                "\"{}\" names more than one field: {}; rename one of them",
                path.join("."),
                readings.join(", ")
            ))
        }
    }
}

/// The columns of `fields` as dotted names, struct columns by their fields (`body.text`), for an
/// error message: "a, b.c, b.d" (and how many more beyond [`LISTED_COLUMNS`]).
pub fn listing(fields: &Fields) -> String {
    fn walk(prefix: &str, fields: &Fields, out: &mut Vec<String>) {
        for f in fields {
            let name = format!("{prefix}{}", f.name());
            match f.data_type() {
                DataType::Struct(children) if !children.is_empty() => {
                    walk(&format!("{name}."), children, out)
                }
                _ => out.push(name),
            }
        }
    }
    let mut names = Vec::new();
    walk("", fields, &mut names);
    if names.is_empty() {
        return "none".to_string();
    }
    let more = names.len().saturating_sub(LISTED_COLUMNS);
    names.truncate(LISTED_COLUMNS);
    let mut list = names.join(", ");
    if more > 0 {
        list.push_str(&format!(" and {more} more"));
    }
    list
}

/// True for a column type that holds text.
pub fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// True for a column type a document's text may be read from: a string type, or `null`, the
/// type pandas and pyarrow give a column of nothing but None (an empty frame's too): a text
/// column whose every row is null, and rows with a null text are rows all the same.
pub fn holds_text(t: &DataType) -> bool {
    is_text(t) || *t == DataType::Null
}

/// True for a column type an id can be rendered from: what a JSON value can be (strings,
/// numbers, booleans, and lists and structs of them).
pub fn is_id(t: &DataType) -> bool {
    use DataType::*;
    match t {
        Null | Boolean | Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64
        | Float16 | Float32 | Float64 | Decimal32(..) | Decimal64(..) | Decimal128(..)
        | Decimal256(..) => true,
        t if is_text(t) => true,
        List(f) | LargeList(f) | FixedSizeList(f, _) => is_id(f.data_type()),
        Struct(fields) => fields.iter().all(|f| is_id(f.data_type())),
        _ => false,
    }
}

/// True for a column type `--keep-by` compares: numbers, strings, booleans, timestamps, dates.
pub fn is_comparable(t: &DataType) -> bool {
    use DataType::*;
    matches!(
        t,
        Boolean
            | Int8
            | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Float16
            | Float32
            | Float64
            | Decimal32(..)
            | Decimal64(..)
            | Decimal128(..)
            | Decimal256(..)
            | Timestamp(..)
            | Date32
            | Date64
    ) || is_text(t)
}

/// The value at row `k` (the arrays along the field's path) as `--keep-by` compares it (see
/// [`FieldValue`]): timestamps and dates in nanoseconds since the epoch, a decimal with a
/// fraction as a double; None when null.
pub fn value_at(arrays: &[ArrayRef], k: usize) -> Option<FieldValue> {
    use arrow_array::types::{
        Date32Type, Date64Type, TimestampMicrosecondType, TimestampMillisecondType,
        TimestampNanosecondType, TimestampSecondType,
    };
    use arrow_schema::TimeUnit;
    use DataType::*;
    if is_null_at(arrays, k) {
        return None;
    }
    let a = arrays.last()?.as_ref();
    let int = |v: i128| Some(FieldValue::Int(v));
    const DAY_NS: i128 = 86_400 * 1_000_000_000;
    match a.data_type() {
        Boolean => int(i128::from(a.as_boolean().value(k))),
        Int8 => int(a.as_primitive::<Int8Type>().value(k).into()),
        Int16 => int(a.as_primitive::<Int16Type>().value(k).into()),
        Int32 => int(a.as_primitive::<Int32Type>().value(k).into()),
        Int64 => int(a.as_primitive::<Int64Type>().value(k).into()),
        UInt8 => int(a.as_primitive::<UInt8Type>().value(k).into()),
        UInt16 => int(a.as_primitive::<UInt16Type>().value(k).into()),
        UInt32 => int(a.as_primitive::<UInt32Type>().value(k).into()),
        UInt64 => int(a.as_primitive::<UInt64Type>().value(k).into()),
        Float16 => FieldValue::float(a.as_primitive::<Float16Type>().value(k).to_f64()),
        Float32 => FieldValue::float(a.as_primitive::<Float32Type>().value(k).into()),
        Float64 => FieldValue::float(a.as_primitive::<Float64Type>().value(k)),
        Timestamp(unit, _) => {
            let (v, per) = match unit {
                TimeUnit::Second => (
                    a.as_primitive::<TimestampSecondType>().value(k),
                    1_000_000_000,
                ),
                TimeUnit::Millisecond => (
                    a.as_primitive::<TimestampMillisecondType>().value(k),
                    1_000_000,
                ),
                TimeUnit::Microsecond => {
                    (a.as_primitive::<TimestampMicrosecondType>().value(k), 1_000)
                }
                TimeUnit::Nanosecond => (a.as_primitive::<TimestampNanosecondType>().value(k), 1),
            };
            int(i128::from(v) * per)
        }
        Date32 => int(i128::from(a.as_primitive::<Date32Type>().value(k)) * DAY_NS),
        Date64 => int(i128::from(a.as_primitive::<Date64Type>().value(k)) * 1_000_000),
        // As the id renders them: an integer when there is no fraction, else a double.
        Decimal32(..) | Decimal64(..) | Decimal128(..) | Decimal256(..) => {
            FieldValue::of_json(&json_at(a, k))
        }
        _ => text_at(a, k).map(|t| FieldValue::Text(t.into())),
    }
}

/// The arrays along `path` in a decoded batch, outermost first (the last is the column itself):
/// a row is null when any of them is null there. None when the batch lacks the column.
pub fn arrays_at(batch: &RecordBatch, path: &[String]) -> Option<Vec<ArrayRef>> {
    let (first, rest) = path.split_first()?;
    let mut arrays = vec![batch.column_by_name(first)?.clone()];
    for segment in rest {
        let parent = arrays.last()?.as_struct_opt()?;
        arrays.push(parent.column_by_name(segment)?.clone());
    }
    Some(arrays)
}

/// True when row `k` is null at any level of `arrays`.
pub fn is_null_at(arrays: &[ArrayRef], k: usize) -> bool {
    // An array of type `null` keeps no validity buffer: `is_null` says false of its rows.
    (arrays.iter()).any(|a| a.is_null(k) || *a.data_type() == DataType::Null)
}

/// The string at row `k` of a text column (see [`is_text`]); None for another type.
pub fn text_at(a: &dyn Array, k: usize) -> Option<&str> {
    match a.data_type() {
        DataType::Utf8 => Some(a.as_string::<i32>().value(k)),
        DataType::LargeUtf8 => Some(a.as_string::<i64>().value(k)),
        DataType::Utf8View => Some(a.as_string_view().value(k)),
        _ => None,
    }
}

/// The text at row `k` of a text column (the arrays along its path); None when it is null.
pub fn text_of(arrays: &[ArrayRef], k: usize) -> Option<&str> {
    if is_null_at(arrays, k) {
        return None;
    }
    text_at(arrays.last()?.as_ref(), k)
}

/// The id at row `k` (the arrays along the id's path): a string as it is, any other value as
/// compact JSON, as a JSON Lines id; None when null.
pub fn id_at(arrays: &[ArrayRef], k: usize) -> Option<String> {
    if is_null_at(arrays, k) {
        return None;
    }
    let column = arrays.last()?;
    if let Some(text) = text_at(column.as_ref(), k) {
        return Some(text.to_string());
    }
    match json_at(column.as_ref(), k) {
        Value::Null => None,
        value => Some(value.to_string()),
    }
}

/// Row `k` of `a` as the JSON value a JSON Lines reader would have built for the same data:
/// integers as 64-bit integers, floats and decimals as doubles (a decimal with no fraction that
/// fits 64 bits as an integer), structs as objects (serde_json's maps keep keys sorted).
fn json_at(a: &dyn Array, k: usize) -> Value {
    use DataType::*;
    if a.is_null(k) {
        return Value::Null;
    }
    match a.data_type() {
        Boolean => a.as_boolean().value(k).into(),
        Int8 => a.as_primitive::<Int8Type>().value(k).into(),
        Int16 => a.as_primitive::<Int16Type>().value(k).into(),
        Int32 => a.as_primitive::<Int32Type>().value(k).into(),
        Int64 => a.as_primitive::<Int64Type>().value(k).into(),
        UInt8 => a.as_primitive::<UInt8Type>().value(k).into(),
        UInt16 => a.as_primitive::<UInt16Type>().value(k).into(),
        UInt32 => a.as_primitive::<UInt32Type>().value(k).into(),
        UInt64 => a.as_primitive::<UInt64Type>().value(k).into(),
        Float16 => narrow_float(a.as_primitive::<Float16Type>().value(k).to_f32()),
        Float32 => narrow_float(a.as_primitive::<Float32Type>().value(k)),
        Float64 => a.as_primitive::<Float64Type>().value(k).into(),
        Decimal32(..) => number(&a.as_primitive::<Decimal32Type>().value_as_string(k)),
        Decimal64(..) => number(&a.as_primitive::<Decimal64Type>().value_as_string(k)),
        Decimal128(..) => number(&a.as_primitive::<Decimal128Type>().value_as_string(k)),
        Decimal256(..) => number(&a.as_primitive::<Decimal256Type>().value_as_string(k)),
        List(_) => list(&a.as_list::<i32>().value(k)),
        LargeList(_) => list(&a.as_list::<i64>().value(k)),
        FixedSizeList(..) => list(&a.as_fixed_size_list().value(k)),
        Struct(_) => {
            let s = a.as_struct();
            let members = s.fields().iter().zip(s.columns());
            Value::Object(
                members
                    .map(|(f, c)| (f.name().clone(), json_at(c.as_ref(), k)))
                    .collect(),
            )
        }
        _ => match text_at(a, k) {
            Some(text) => text.into(),
            // Refused when the file was opened (`is_id`).
            None => Value::Null,
        },
    }
}

fn list(values: &ArrayRef) -> Value {
    Value::Array((0..values.len()).map(|i| json_at(values, i)).collect())
}

/// A 32- or 16-bit float as the double its shortest decimal form parses to (0.1f32 is 0.1, not
/// 0.10000000149011612), as it would be read back from JSON.
fn narrow_float(v: f32) -> Value {
    v.to_string()
        .parse::<f64>()
        .map_or(Value::Null, Value::from)
}

/// A decimal's digits as JSON would parse them.
fn number(digits: &str) -> Value {
    serde_json::from_str::<Value>(digits).unwrap_or(Value::Null)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{ListBuilder, StringBuilder};
    use arrow_array::{
        BooleanArray, Decimal128Array, Float32Array, Float64Array, Int64Array, StringArray,
        StructArray, UInt64Array,
    };

    use super::*;

    fn path(dotted: &str) -> Vec<String> {
        dotted.split('.').map(str::to_owned).collect()
    }

    /// Every row of a one-column batch, rendered as an id.
    fn ids(column: ArrayRef) -> Vec<Option<String>> {
        let batch = RecordBatch::try_from_iter([("id", column)]).unwrap();
        let arrays = arrays_at(&batch, &path("id")).unwrap();
        (0..batch.num_rows()).map(|k| id_at(&arrays, k)).collect()
    }

    fn some(items: &[&str]) -> Vec<Option<String>> {
        items.iter().map(|s| Some(s.to_string())).collect()
    }

    #[test]
    fn ids_render_as_json_lines_ids() {
        let strings = Arc::new(StringArray::from(vec![Some("a b"), None, Some("")]));
        assert_eq!(
            ids(strings),
            [Some("a b".into()), None, Some(String::new())]
        );
        let ints = Arc::new(Int64Array::from(vec![-3, i64::MAX]));
        assert_eq!(ids(ints), some(&["-3", "9223372036854775807"]));
        assert_eq!(
            ids(Arc::new(UInt64Array::from(vec![u64::MAX]))),
            some(&["18446744073709551615"])
        );
        let floats = Arc::new(Float64Array::from(vec![1.0, 0.5, f64::NAN]));
        assert_eq!(ids(floats), [Some("1.0".into()), Some("0.5".into()), None]);
        assert_eq!(
            ids(Arc::new(Float32Array::from(vec![0.1f32]))),
            some(&["0.1"])
        );
        assert_eq!(
            ids(Arc::new(BooleanArray::from(vec![true]))),
            some(&["true"])
        );
        let decimals = Decimal128Array::from(vec![12345, 7]).with_precision_and_scale(20, 0);
        assert_eq!(ids(Arc::new(decimals.unwrap())), some(&["12345", "7"]));
        let decimals = Decimal128Array::from(vec![1230]).with_precision_and_scale(10, 2);
        assert_eq!(ids(Arc::new(decimals.unwrap())), some(&["12.3"]));
    }

    #[test]
    fn nested_ids_are_compact_json_with_sorted_keys() {
        let mut tags = ListBuilder::new(StringBuilder::new());
        tags.values().append_value("x");
        tags.values().append_null();
        tags.append(true);
        tags.append(false);
        let tags: ArrayRef = Arc::new(tags.finish());
        assert_eq!(ids(tags.clone()), [Some(r#"["x",null]"#.into()), None]);
        let n: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None]));
        let s = StructArray::from(vec![
            (Arc::new(Field::new("z", DataType::Int64, true)), n),
            (
                Arc::new(Field::new("a", tags.data_type().clone(), true)),
                tags,
            ),
        ]);
        assert_eq!(
            ids(Arc::new(s)),
            some(&[r#"{"a":["x",null],"z":1}"#, r#"{"a":null,"z":null}"#])
        );
    }

    #[test]
    fn finds_nested_columns_and_lists_them() {
        let body = Fields::from(vec![
            Field::new("text", DataType::Utf8, true),
            Field::new("title", DataType::Utf8, true),
        ]);
        let fields = Fields::from(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("body", DataType::Struct(body), true),
        ]);
        assert_eq!(find(&fields, &path("body.text")).unwrap().name(), "text");
        assert!(find(&fields, &path("body")).is_some());
        for missing in ["text", "body.body", "id.text", "body.text.x"] {
            assert!(find(&fields, &path(missing)).is_none(), "{missing}");
        }
        assert_eq!(listing(&fields), "id, body.text, body.title");
        assert_eq!(listing(&Fields::empty()), "none");
        let wide: Fields = (0..45)
            .map(|i| Field::new(format!("c{i}"), DataType::Utf8, true))
            .collect();
        assert!(
            listing(&wide).ends_with("c39 and 5 more"),
            "{}",
            listing(&wide)
        );
    }

    #[test]
    fn text_and_id_types() {
        assert!(is_text(&DataType::LargeUtf8) && !is_text(&DataType::Binary));
        assert!(holds_text(&DataType::Null) && !is_text(&DataType::Null));
        assert!(!holds_text(&DataType::Binary));
        let nulls = [Arc::new(arrow_array::NullArray::new(2)) as ArrayRef];
        assert!(is_null_at(&nulls, 1) && text_of(&nulls, 0).is_none());
        assert!(is_id(&DataType::Int32) && is_id(&DataType::Utf8View));
        let list = DataType::List(Arc::new(Field::new("item", DataType::Float64, true)));
        assert!(is_id(&list));
        assert!(!is_id(&DataType::Binary));
        assert!(!is_id(&DataType::Date32));
    }
}
