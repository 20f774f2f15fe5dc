// Measurements from the experiments' SQLite results database (contract D in the project's
// design notes; docs/fitter.md "From the results database"), turned into the DataTable the fitter
// and the plots read.
//
// The rows come from the results library (results/results_db.h, which owns the schema); this
// turns them into the fitter's table. Each successful run (status = 'ok') of one design on one
// platform becomes one row: its factor values and its response values (JSON objects in the run's
// row) become columns, so the model's components find their measured columns by name (t_comm, ...)
// and the total its `t_wall`. Replications stay separate rows (the fit's standard errors then
// see the run-to-run spread); rows of one design point share a group, so cross-validation leaves
// out the whole point.
//
// Contract: LoadResults throws DataError naming the file, the design, the run id and the field
// for anything it cannot use: no such database or table, no 'ok' run of the design (listing the
// designs that exist), runs on several platforms without a choice, a response that is not a
// number. Factors whose values are text (e.g. "mpi": "openmpi") are not columns; they are listed
// in DataTable::text_columns so a model that needs one gets a precise error.
#pragma once

#include <string>
#include <vector>

#include "fitter/data_table.h"

namespace invmw::fit {

struct ResultsQuery {
  std::string design;    // required
  std::string platform;  // empty: the design must have been run on exactly one platform
};

DataTable LoadResults(const std::string& db_path, const ResultsQuery& query);

}  // namespace invmw::fit
