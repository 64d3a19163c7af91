// {task}
const axios = require('axios');

axios.
