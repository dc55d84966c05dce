// The one number a query such as `SELECT count(*) FROM samples` gives,
// read from the database at `path` through its own read-only connection;
// -1 when the query fails (a failed test expectation says why).
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace rssaudit::testing {

inline int64_t sqlite_count(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK)
      << path << ": " << sqlite3_errmsg(db);
  const int64_t n =
      sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
  sqlite3_finalize(s);
  sqlite3_close(db);
  return n;
}

}  // namespace rssaudit::testing
