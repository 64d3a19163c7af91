// {task}
const axios = require('axios');

axios.{method}('{url}',
