//! Mapping between JSON values (commands, snapshots) and typed PostgreSQL
//! columns, mirroring state-sqlite's reading: booleans as 0/1 in integer
//! columns, arrays and objects as JSON text.

use postgres::Row;
use postgres::types::{ToSql, Type};
use serde_json::Value;

use crate::error::PgStoreError;

/// A bound parameter and its type.
pub(crate) type Param = (Box<dyn ToSql + Sync + Send>, Type);

fn bad(column: &str, ty: &Type, v: &Value) -> PgStoreError {
    PgStoreError::BadValue {
        column: column.to_owned(),
        ty: ty.name().to_owned(),
        value: v.to_string(),
    }
}

/// Binds `v` for `column` of type `ty`.
pub(crate) fn bind(column: &str, ty: &Type, v: &Value) -> Result<Param, PgStoreError> {
    let boxed: Box<dyn ToSql + Sync + Send> = match *ty {
        Type::INT8 | Type::INT4 | Type::INT2 => {
            let i: Option<i64> = match v {
                Value::Null => None,
                Value::Bool(b) => Some(i64::from(*b)),
                Value::Number(n) => Some(n.as_i64().ok_or_else(|| bad(column, ty, v))?),
                _ => return Err(bad(column, ty, v)),
            };
            match *ty {
                Type::INT8 => Box::new(i),
                Type::INT4 => Box::new(
                    i.map(i32::try_from)
                        .transpose()
                        .map_err(|_| bad(column, ty, v))?,
                ),
                _ => Box::new(
                    i.map(i16::try_from)
                        .transpose()
                        .map_err(|_| bad(column, ty, v))?,
                ),
            }
        }
        Type::FLOAT8 | Type::FLOAT4 => {
            let f: Option<f64> = match v {
                Value::Null => None,
                Value::Number(n) => Some(n.as_f64().ok_or_else(|| bad(column, ty, v))?),
                _ => return Err(bad(column, ty, v)),
            };
            if *ty == Type::FLOAT8 {
                Box::new(f)
            } else {
                #[allow(clippy::cast_possible_truncation, reason = "a REAL column holds f32")]
                Box::new(f.map(|f| f as f32))
            }
        }
        Type::BOOL => {
            let b: Option<bool> = match v {
                Value::Null => None,
                Value::Bool(b) => Some(*b),
                Value::Number(n) if n.as_i64() == Some(0) => Some(false),
                Value::Number(n) if n.as_i64() == Some(1) => Some(true),
                _ => return Err(bad(column, ty, v)),
            };
            Box::new(b)
        }
        Type::TEXT | Type::VARCHAR => {
            let s: Option<String> = match v {
                Value::Null => None,
                Value::String(s) => Some(s.clone()),
                other => Some(other.to_string()),
            };
            Box::new(s)
        }
        _ => return Err(bad(column, ty, v)),
    };
    Ok((boxed, ty.clone()))
}

/// A value as it reads back from a column of type `ty` (what a guard must
/// compare against).
pub(crate) fn normalize(ty: &Type, v: &Value) -> Value {
    match (ty, v) {
        (t, Value::Bool(b)) if *t == Type::INT8 || *t == Type::INT4 || *t == Type::INT2 => {
            Value::from(i64::from(*b))
        }
        (t, Value::Array(_) | Value::Object(_)) if *t == Type::TEXT || *t == Type::VARCHAR => {
            Value::String(v.to_string())
        }
        _ => v.clone(),
    }
}

/// Column `i` of `row` as JSON (NULL as `Value::Null`).
pub(crate) fn read(row: &Row, i: usize) -> Result<Value, PgStoreError> {
    let ty = row.columns()[i].type_().clone();
    let v = match ty {
        Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Value::from),
        Type::INT4 => row.try_get::<_, Option<i32>>(i)?.map(Value::from),
        Type::INT2 => row.try_get::<_, Option<i16>>(i)?.map(Value::from),
        Type::FLOAT8 => row
            .try_get::<_, Option<f64>>(i)?
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number),
        Type::FLOAT4 => row
            .try_get::<_, Option<f32>>(i)?
            .and_then(|f| serde_json::Number::from_f64(f64::from(f)))
            .map(Value::Number),
        Type::BOOL => row.try_get::<_, Option<bool>>(i)?.map(Value::from),
        _ => row.try_get::<_, Option<String>>(i)?.map(Value::from),
    };
    Ok(v.unwrap_or(Value::Null))
}

/// Borrowed parameter list for `query_typed`.
pub(crate) fn refs(params: &[Param]) -> Vec<(&(dyn ToSql + Sync), Type)> {
    params
        .iter()
        .map(|(v, t)| (&**v as &(dyn ToSql + Sync), t.clone()))
        .collect()
}
