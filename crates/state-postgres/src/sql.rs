//! A small builder for statements with typed, numbered parameters.

use postgres::types::{ToSql, Type};
use postgres::{Row, Transaction};

use crate::error::PgStoreError;
use crate::values::{Param, refs};

/// SQL text plus its parameters, each bound with its type, for
/// `query_typed` (parse, bind and execute in one round trip).
#[derive(Default)]
pub(crate) struct Sql {
    pub(crate) text: String,
    params: Vec<Param>,
}

impl Sql {
    pub(crate) fn new(text: impl Into<String>) -> Self {
        Sql {
            text: text.into(),
            params: Vec::new(),
        }
    }

    /// Adds a parameter and returns its placeholder (`$n`).
    pub(crate) fn bind<T: ToSql + Sync + Send + 'static>(&mut self, v: T, ty: Type) -> String {
        self.params.push((Box::new(v), ty));
        format!("${}", self.params.len())
    }

    /// Adds an already typed parameter.
    pub(crate) fn bind_param(&mut self, p: Param) -> String {
        self.params.push(p);
        format!("${}", self.params.len())
    }

    pub(crate) fn push(&mut self, s: &str) {
        self.text.push_str(s);
    }

    pub(crate) fn query(&self, tx: &mut Transaction<'_>) -> Result<Vec<Row>, PgStoreError> {
        Ok(tx.query_typed(&self.text, &refs(&self.params))?)
    }

    pub(crate) fn query_client(
        &self,
        client: &mut impl postgres::GenericClient,
    ) -> Result<Vec<Row>, PgStoreError> {
        Ok(client.query_typed(&self.text, &refs(&self.params))?)
    }
}
