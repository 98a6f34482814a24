package doctor

import _ "github.com/glebarez/go-sqlite" // driver "sqlite" for the seed files
