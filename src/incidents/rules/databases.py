"""Rules for database clients and servers: PostgreSQL, MySQL, SQLite, Redis (split from
`incidents.rules.platforms`, which would pass 500 lines). Row format: `incidents.rules`."""

from __future__ import annotations

from incidents.rules import (
    GENERIC,
    NAMED,
    SYNTAX,
    UNKNOWN,
    VERDICT,
    C,
    E,
    N,
    Row,
    T,
)

RULES: dict[str, tuple[Row, ...]] = {
    "databases": (
        (
            "database login refused",
            NAMED,
            UNKNOWN,
            N,
            "password pg_hba invalidpassword 28p01 sasl ident peer noauth wrongpass noperm"
            " er_access_denied_error er_dbaccess_denied_error 1045 1044 1142 denied",
            r"password authentication failed for user|no pg_hba\.conf entry for|\bInvalidPassword"
            r"\b|\b28P01\b|SASL authentication failed|(?:Ident|peer) authentication failed"
            r"|\bNOAUTH\b|\bWRONGPASS\b|\bERR invalid password\b|\bNOPERM\b|\bER_(?:DB)?ACCESS_"
            r"DENIED_ERROR\b|\bERROR 10(?:45|44) \(|\bERROR 1142 \(|Access denied for user",
            'FATAL:  password authentication failed for user "app"',
        ),
        (
            "database not provisioned",
            NAMED,
            UNKNOWN,
            E,
            "role database invalidcatalogname 3d000 unknown er_bad_db_error extension",
            r"(?:role|database) \"[^\"]+\" does not exist|\bInvalidCatalogName\b|\b3D000\b|Unknown "
            r"database '[^']+'|\bER_BAD_DB_ERROR\b|extension \"[^\"]+\" is not available",
            'FATAL:  database "orders" does not exist',
        ),
        (
            "database unavailable",
            GENERIC,
            UNKNOWN,
            T,
            "database server terminating clients slots connections cannotconnectnow adminshutdown"
            " 57p01 57p03 53300 receive ssl connection",
            r"the database system is (?:starting up|shutting down|in recovery mode|not yet "
            r"accepting connections)|Is the server running|terminating connection due to "
            r"administrator command|sorry, too many clients already|remaining connection slots are "
            r"reserved|(?i:\btoo many connections\b)|\bCannotConnectNow\b|\bAdminShutdown\b"
            r"|\b57P0[13]\b|\b53300\b|could not receive data from server|SSL SYSCALL error: EOF "
            r"detected|SSL connection has been closed unexpectedly|connection to server at "
            r"\"[^\"]+\"[^\n]* failed",
            "FATAL:  the database system is starting up",
        ),
        (
            "MySQL server unavailable",
            NAMED,
            UNKNOWN,
            T,
            "mysql 2002 2003 2006 2013 er_con_count_error protocol_connection_lost",
            r"Can't connect to (?:local )?MySQL server|Lost connection to MySQL server|MySQL server"
            r" has gone away|\bERROR 20(?:02|03|06|13) \(|\bER_CON_COUNT_ERROR\b"
            r"|\bPROTOCOL_CONNECTION_LOST\b",
            "ERROR 2002 (HY000): Can't connect to local MySQL server through socket",
        ),
        (
            "Redis unavailable",
            NAMED,
            UNKNOWN,
            T,
            "loading busy clusterdown tryagain readonly masterdown connecting clients"
            " busyloadingerror",
            # redis-py drops the prefix into the class: `BusyLoadingError: Redis is loading ...`
            r"\bLOADING Redis is loading\b|\bBusyLoadingError\b|\bBUSY Redis is busy\b"
            r"|\bCLUSTERDOWN\b|\bTRYAGAIN\b"
            r"|\bREADONLY You can't write against a read only replica|\bMASTERDOWN\b|\bError \d+ "
            r"connecting to [^\s:]+:\d+|max number of clients reached",
            "redis.exceptions.BusyLoadingError: LOADING Redis is loading the dataset in memory",
        ),
        (
            "Redis out of memory or disk",
            NAMED,
            UNKNOWN,
            E,
            "oom misconf",
            r"OOM command not allowed when used memory|\bMISCONF\b",
            "OOM command not allowed when used memory > 'maxmemory'.",
        ),
        (
            "SQL syntax",
            VERDICT,
            SYNTAX,
            C,
            "syntax er_parse_error 42601 near incomplete",
            r"syntax error at or near|You have an error in your SQL syntax|\bER_PARSE_ERROR\b"
            r"|\b42601\b|near \"[^\"]+\": syntax error|\bincomplete input\b",
            'ERROR:  syntax error at or near "FORM"',
        ),
        (
            "SQL column missing",
            NAMED,
            UNKNOWN,
            C,
            "column undefinedcolumn 42703 er_bad_field_error",
            r"column \"[^\"]+\" (?:of relation \"[^\"]+\" )?does not exist|no such column: "
            r"|Unknown column '[^']+'|\bUndefinedColumn\b|\b42703\b|\bER_BAD_FIELD_ERROR\b",
            'psycopg2.errors.UndefinedColumn: column "emial" does not exist',
        ),
        (
            "SQL table missing",
            NAMED,
            UNKNOWN,
            E,
            "relation table undefinedtable 42p01 er_no_such_table",
            r"relation \"[^\"]+\" does not exist|no such table: |Table '[^']+' doesn't exist"
            r"|\bUndefinedTable\b|\b42P01\b|\bER_NO_SUCH_TABLE\b",
            'psycopg2.errors.UndefinedTable: relation "users" does not exist',
        ),
        (
            "SQL constraint",
            NAMED,
            UNKNOWN,
            C,
            "violates duplicate unique foreign null integrityerror uniqueviolation er_dup_entry"
            " 23505 23503 23502",
            r"violates (?:unique|foreign key|not-null|check) constraint|duplicate key value|UNIQUE "
            r"constraint failed|FOREIGN KEY constraint failed|NOT NULL constraint failed|Duplicate "
            r"entry '[^']*' for key|\bIntegrityError\b|\bUniqueViolation\b|\bER_DUP_ENTRY\b"
            r"|\b2350[235]\b",
            "sqlite3.IntegrityError: UNIQUE constraint failed: users.email",
        ),
        (
            "SQLite file unusable",
            NAMED,
            UNKNOWN,
            E,
            "database sqlite_cantopen sqlite_corrupt sqlite_full sqlite_readonly disk sqlite_ioerr"
            " sqlite_ioerr_write sqlite_ioerr_read sqlite_ioerr_fsync",
            r"unable to open database file|database disk image is malformed|disk I/O error"
            r"|\bSQLITE_IOERR\w*|\bSQLITE_(?:CANTOPEN"
            r"|CORRUPT|FULL|READONLY)\b",
            "sqlite3.OperationalError: unable to open database file",
        ),
        (
            "Redis command error",
            NAMED,
            UNKNOWN,
            C,
            "wrongtype unknown wrong",
            r"\bWRONGTYPE\b|\bERR unknown command\b|\bERR wrong number of arguments\b",
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        ),
    ),
}
