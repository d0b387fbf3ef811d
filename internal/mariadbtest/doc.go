// Package mariadbtest starts throwaway MariaDB (or MySQL) servers for tests,
// benchmarks and demos: mariadb-install-db into a temporary directory, then
// mariadbd on a free loopback port, run as the mysql user when the caller is
// root (the server refuses root). Each server has an account User/Password
// with every privilege, and its general log in a table when asked
// (Server.GeneralLog), the truth to check a counter against.
package mariadbtest
